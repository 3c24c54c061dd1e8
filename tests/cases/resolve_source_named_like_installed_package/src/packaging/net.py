from torch import nn

from packaging.version import parse

MIN = parse("1.2")


class Net(nn.Module):
    def forward(self, x):
        return x * MIN[0]
