import torch
from torch import nn

from .ops import fused_gelu


class Net(nn.Module):
    def forward(self, x):
        return fused_gelu(x)

    @torch.jit.ignore
    def debug(self, x):
        return x

    @torch.jit.unused
    def export(self):
        return None
