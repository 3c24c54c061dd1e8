import math

from .module import Module

_SCALE = 1.0


def _fan_in_bound(features):
    return _SCALE / math.sqrt(features)


class Linear(Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.bound = _fan_in_bound(in_features)
        self.out_features = out_features

    def forward(self, x):
        return x * self.bound
