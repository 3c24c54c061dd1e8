import torch.nn as nn

from utils.general import make_divisible


class Conv(nn.Module):
    def __init__(self, c1, c2, k=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, make_divisible(c2), k)

    def forward(self, x):
        return self.conv(x)
