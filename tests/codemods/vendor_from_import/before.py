from timm.layers import Mlp

model = Mlp(4, 8)
