import torch
from torch import nn

from .registry import register, traced


@torch.jit.script
def gelu_ish(x):
    return x * torch.sigmoid(1.702 * x)


@register("net")
class Net(nn.Module):
    @traced
    def forward(self, x):
        return gelu_ish(x)

    @property
    def width(self):
        return 1
