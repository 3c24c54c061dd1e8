"""A model built from timm layers."""

import os  # the environment

# timm's layers, vendored soon
# the MLP itself
from vendor.blocks.Mlp import (
    Mlp,  # the MLP
)
from vendor.blocks.DropPath import (
    DropPath,  # regularization
)

# end of imports


def build() -> object:
    return [Mlp(4), DropPath(0.1), Mlp(2), os.sep]
