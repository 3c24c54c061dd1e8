from vendor.blocks.Mlp import Mlp

model = Mlp(4, 8)
