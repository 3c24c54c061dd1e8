import torch
from torch import nn

from lib.symbolic import fit_symbol


class Fit(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) + fit_symbol(x)
