from torch import nn

from .layers import Mlp


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.mlp = Mlp(dim)

    def forward(self, x):
        return self.mlp(x) + x

    @classmethod
    def register_for(cls, kind):
        import pkg.layers as layers

        if not hasattr(layers, kind):
            raise ValueError(kind)
        return vars(layers)
