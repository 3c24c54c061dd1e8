from torch import nn

from pkg.factories import Act


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = Act[Act.GELU]()

    def forward(self, x):
        return self.act(x)
