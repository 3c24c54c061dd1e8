from torch import nn

from .table import ACTIVATIONS, DEFAULT


class Net(nn.Module):
    act_cls = ACTIVATIONS[DEFAULT]
    names = sorted(ACTIVATIONS)

    def __init__(self):
        super().__init__()
        self.act = self.act_cls()

    def forward(self, x):
        return self.act(x)
