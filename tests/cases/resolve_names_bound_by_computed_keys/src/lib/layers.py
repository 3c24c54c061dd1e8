import torch
from torch import nn

from lib import acts
from lib.functional import Sigmoid


class Gate(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.gate = Sigmoid()
        self.act = acts.ReLU()
        self.clip = acts.Hardtanh()

    def forward(self, x):
        return self.clip(self.act(self.proj(x)) * self.gate(x))
