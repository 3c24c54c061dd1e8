from torch import nn

from .build import build_layer
from .settings import Options, Source


class Block(nn.Module):
    def __init__(self, options: Options = None):
        super().__init__()
        width = options.width if options is not None else 4
        self.layer = build_layer(dict(width=width))

    def forward(self, x):
        return self.layer(x)

    def load(self, source: Source):
        return source.read()
