from __future__ import annotations

import torch
from torch import nn

from .helpers import double


class Net(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return double(x)
