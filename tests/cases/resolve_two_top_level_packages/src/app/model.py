from torch import nn

from lib import Residual


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Residual(nn.Identity())

    def forward(self, x):
        return self.body(x)
