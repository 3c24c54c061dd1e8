use_segment_matmul = None
