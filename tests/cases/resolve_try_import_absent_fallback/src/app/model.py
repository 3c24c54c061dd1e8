from torch import nn

from app import SCALE


class Net(nn.Module):
    def forward(self, x):
        return x * SCALE
