from torch import nn

try:
    from lib import fused
    HAS_FUSED = True
except ImportError:
    HAS_FUSED = False


class Net(nn.Module):
    def forward(self, x):
        return fused(x) if HAS_FUSED else x
