from timm.layers import to_2tuple
from vendor.blocks.DropPath import DropPath
from vendor.blocks.Mlp import Mlp

layers = [Mlp(4), DropPath(0.1), to_2tuple(3)]
