from torch import nn

from . import layers


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.namespace = vars(layers)

    def forward(self, x):
        return x
