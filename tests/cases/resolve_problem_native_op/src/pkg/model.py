from torch import nn

from . import _C


class Net(nn.Module):
    def forward(self, x):
        return _C.fused(x)
