from torch import nn

from .helpers import *


class Net(nn.Module):
    def forward(self, x):
        return scale(x)
