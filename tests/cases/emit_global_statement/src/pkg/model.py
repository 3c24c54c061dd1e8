from torch import nn

from .cache import cached

_STATE = "model"


class Net(nn.Module):
    def forward(self, x):
        return cached(x), _STATE
