import torch
import timm.layers as L


def build(dim: int) -> torch.nn.Module:
    return L.Mlp(dim, 2 * dim)
