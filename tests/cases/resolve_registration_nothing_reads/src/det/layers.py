import torch
from torch import nn

from det.registry import MODELS


@MODELS.register_module(
    name="ScaledConv",
)
class ScaledConv(nn.Module):
    """A registered helper the block calls by name."""

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.conv(x) * self.scale


@MODELS.register_module()
class Leaf(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.body = ScaledConv(channels)

    def forward(self, x):
        return torch.relu(self.body(x))
