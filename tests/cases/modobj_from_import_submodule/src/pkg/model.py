from torch import nn


class Net(nn.Module):
    def __init__(self, size=8):
        super().__init__()
        self.size = size

    def forward(self, x):
        from pkg import functional as F

        return F.resize(x, self.size)

    def extra(self, x):
        from pkg import functional

        return functional.pad(x, 1)
