from typing import Optional, Tuple

from torch import nn

from pkg.helpers import make, total


class Net(nn.Module):
    def __init__(self, dims: Tuple[int, ...] = (4, 4), act: Optional[str] = None):
        super().__init__()
        self.body = make(list(dims), act)

    def forward(self, x):
        return total(self.body(x))
