import torch
from torch import nn

from pkg.layers import Scale


def build(name, arg):
    """A layer a config names: torch's (``nn.ReLU``) or one of the package's by full name."""
    layer = (
        getattr(torch.nn, name[3:])
        if name.startswith("nn.")
        else getattr(__import__("pkg").layers, name[11:])
    )
    return layer(arg) if arg is not None else layer()


class Net(nn.Module):
    def __init__(self, spec=(("pkg.layers.Scale", 2.0), ("nn.ReLU", None))):
        super().__init__()
        self.body = nn.Sequential(*(build(name, arg) for name, arg in spec))
        self.head = Scale(1.0)

    def forward(self, x):
        return self.head(self.body(x))
