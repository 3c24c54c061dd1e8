from torch import nn

from .util import helper, missing_factor


class Net(nn.Module):
    def forward(self, x):
        return helper(x) * missing_factor
