from torch import nn

from .meta import Tracked


class Net(nn.Module, metaclass=Tracked):
    def forward(self, x):
        return x
