from torch import nn

from .utils import merge, stack


class Net(nn.Module):
    def forward(self, x):
        return merge(stack([x, x]))
