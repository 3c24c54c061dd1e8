import torch
from torch import nn

from engine.root import MODELS


@MODELS.register_module(name=["Swish", "SiLU"])
class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


@MODELS.register_module()
class HSigmoid(nn.Module):
    def forward(self, x):
        return torch.clamp(x + 3, 0, 6) / 6


def build_activation_layer(cfg):
    return MODELS.build(cfg)
