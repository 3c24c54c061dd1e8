from torch import nn

from . import x, y


def act(v):
    return x.act(v) + y.act(v)


class Net(nn.Module):
    def forward(self, v):
        return act(v)
