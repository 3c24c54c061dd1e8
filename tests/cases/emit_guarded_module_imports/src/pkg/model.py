from .avail import has_fastlib

if has_fastlib():
    from .quant import dequantize
else:
    dequantize = None

try:
    from .fused import fused
except ImportError:
    fused = None


def maybe_scaled(x):
    if has_fastlib():
        from .quant import SCALE

        return x * SCALE
    return x


class Block:
    def forward(self, x):
        if dequantize is not None:
            x = dequantize(x, None)
        if fused is not None:
            x = fused(x)
        return maybe_scaled(x) * 2
