from torch import nn

from .layers import Mlp


def layer_names():
    import pkg.layers as layers

    return sorted(vars(layers))


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.mlp = Mlp(dim)
        self.names = layer_names()

    def forward(self, x):
        return self.mlp(x) + x

    @classmethod
    def register_for(cls, kind):
        import pkg.layers as layers

        if not hasattr(layers, kind) or not hasattr(layers, "Mlp"):
            raise ValueError(kind)
        return kind
