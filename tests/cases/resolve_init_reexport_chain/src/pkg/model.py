from torch import nn

from pkg import Mlp


class Net(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.mlp = Mlp(dim)

    def forward(self, x):
        return self.mlp(x)
