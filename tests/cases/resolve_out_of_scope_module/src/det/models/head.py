from torch import nn

from det.utils import make_divisible
from eng.dist import get_world_size


class Head(nn.Module):
    def __init__(self, channels=30):
        super().__init__()
        width = make_divisible(channels) // get_world_size()
        self.conv = nn.Conv2d(channels, width, 1)

    def forward(self, x):
        return self.conv(x)
