from torch import nn

from .consts import SCALE, WIDTHS

LAST = WIDTHS[-1]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(LAST, LAST)

    def forward(self, x):
        return self.proj(x) * SCALE
