import torch


def decode(x, limit=None):
    if limit is not None:
        if torch.onnx.is_in_onnx_export():
            # moved away in a later release of the package
            from pkg.legacy.export import clip_for_export
            return clip_for_export(x, limit)
        x = x.clamp(max=limit)
    return x


def encode(x, fused=False):
    if fused:
        from pkg.coders import decode, fused_encode as encode_fast
        return decode(encode_fast(x))
    return x * 2
