import torch
from torch import nn

from .docs import DOC, EXTRA

DOC += " width (int)"
EXTRA += ["b"]


class Net(nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.doc = DOC
        self.extra = EXTRA
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)
