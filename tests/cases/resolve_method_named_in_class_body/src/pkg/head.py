from torch import nn

from .base import BaseHead


class Head(BaseHead):
    def __init__(self, width=4):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x)
