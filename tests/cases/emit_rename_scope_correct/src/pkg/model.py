from torch import nn

from .other import build


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = build(Mlp=1)

    def forward(self, x):
        return self.inner(x)
