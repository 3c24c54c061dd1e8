from torch import nn


class Net(nn.Module):
    def forward(self, x):
        from .helpers import scale, shift as move  # imported lazily in the original
        return move(scale(x))
