from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

from .helpers import double

if TYPE_CHECKING:
    from torch import Tensor


class Net(nn.Module):
    def forward(self, x: Tensor, scale: "float" = 1.0) -> Tensor:
        y: Tensor = double(x)
        return y * scale
