import torch
from torch import nn

from engine.registry import MODELS


@MODELS.register_module()
class ReLU(nn.ReLU):
    pass


@MODELS.register_module()
class Tanh(nn.Tanh):
    pass


@MODELS.register_module()
class GELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x**3)))
