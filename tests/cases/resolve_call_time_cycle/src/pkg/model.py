from torch import nn

from .odd import is_odd


class Net(nn.Module):
    def forward(self, x):
        return x if is_odd(3) else -x
