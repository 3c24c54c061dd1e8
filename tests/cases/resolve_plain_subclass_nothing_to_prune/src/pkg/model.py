from torch import nn

from .helpers import Doubler


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.scaler = Doubler()

    def forward(self, x):
        return self.scaler.scale(x)
