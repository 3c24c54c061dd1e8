from torch import nn

from esm.fold.v1.misc import SequenceToPair


class Trunk(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.pair = SequenceToPair(dim)

    def forward(self, x):
        return self.pair(x)
