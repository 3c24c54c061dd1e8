from torch import nn

from .util import helper


class Net(nn.Module):
    def forward(self, x):
        return helper(x)
