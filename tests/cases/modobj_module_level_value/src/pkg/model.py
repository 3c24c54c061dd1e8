from torch import nn

import pkg.sub.acts as acts
from pkg.registry import lookup


class Net(nn.Module):
    def __init__(self, act="gelu"):
        super().__init__()
        self.act = lookup(acts, act)

    def forward(self, x):
        return acts.relu(self.act(x))
