from torch import nn


class Attention(nn.Module):
    def forward(self, x):
        return x


def helper(x):
    return x + 1


def late(x):
    return x - 1
