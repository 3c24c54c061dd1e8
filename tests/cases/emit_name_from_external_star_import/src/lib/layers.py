from math import *

from torch import nn


class Scaled(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) / sqrt(x.shape[-1])
