from torch import nn

try:
    from .fast import fused
    HAS_FAST = True
except ImportError:
    fused = None
    HAS_FAST = False


class Net(nn.Module):
    def forward(self, x):
        return fused(x) if HAS_FAST else x
