from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor


@dataclass
class Config:
    dim: int = 8
    scale: float | None = None

    def apply(self, x: Tensor) -> Tensor:
        return x * (self.scale or 1.0)
