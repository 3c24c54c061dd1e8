"""A model built from timm layers."""

import os  # the environment

# timm's layers, vendored soon
import timm.layers as L  # as L
# the MLP itself
from timm.layers import (
    Mlp,  # the MLP
    DropPath,  # regularization
)

# end of imports


def build() -> object:
    return [Mlp(4), DropPath(0.1), L.Mlp(2), os.sep]
