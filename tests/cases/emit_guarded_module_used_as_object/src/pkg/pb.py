from nnrag_absent_protobuf import descriptor_pool as _descriptor_pool

DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile(b"\n\x05model")
