import torch
from torch import nn

OFFSET = 1.0


def make_shift(amount):
    def shift(x):
        def inner(y):
            return y + amount + OFFSET

        return inner(x)

    return shift


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = make_shift(2.0)

    def forward(self, x: torch.Tensor):
        return self.fn(x)
