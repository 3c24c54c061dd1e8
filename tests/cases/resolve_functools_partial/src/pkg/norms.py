from functools import partial

from torch import nn

EPS = 1e-6


def make_norm(dim, eps, affine=True):
    return nn.LayerNorm(dim, eps=eps, elementwise_affine=affine)


LayerNorm6 = partial(make_norm, eps=EPS)
