from torch import nn

from .acts import *


class Net(nn.Module):
    def forward(self, x):
        return hard_swish(x)
