from torch import nn


class Mlp(nn.Module):
    def forward(self, x):
        return x


def build(Mlp=None, **kw):
    layer = globals_mlp = make()
    return layer


def make():
    return Mlp()
