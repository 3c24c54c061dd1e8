import torch
from torch import nn

from engine.registry import MODELS


@MODELS.register_module()
class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


def wide_init(layer):
    nn.init.zeros_(layer.bias)
    return layer


@MODELS.register_module(name="Wide")
class WideLayer(nn.Module):
    def __init__(self, channels=8):
        super().__init__()
        self.proj = wide_init(nn.Linear(channels, 4 * channels))

    def forward(self, x):
        return self.proj(x)
