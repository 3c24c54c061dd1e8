from vendor.blocks.Mlp import Mlp

block = Mlp(4)
