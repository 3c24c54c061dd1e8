from torch import nn

from .layers import Mlp as Block


class Net(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.block = Block(dim)

    def forward(self, x):
        return self.block(x)
