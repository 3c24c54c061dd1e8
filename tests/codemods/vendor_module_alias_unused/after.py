import torch
from vendor.blocks.Mlp import Mlp


def build(dim: int) -> torch.nn.Module:
    return Mlp(dim, 2 * dim)
