from torch import nn

from .a import make


class Block(nn.Module):
    pass


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = make(1)
        self.b = Block()

    def forward(self, x):
        return self.b(self.a(x))
