from torch import nn

from .utils import pick


class Net(nn.Module):
    def forward(self, x):
        return pick(x, -x) * max(1, 2)
