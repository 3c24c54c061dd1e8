from torch import nn

from pkg.factories import Act


class Block(nn.Module):
    def __init__(self, act=Act.GELU):
        super().__init__()
        self.act = Act[act]()

    def forward(self, x):
        return self.act(x)
