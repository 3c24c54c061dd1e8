import timm.layers as L
from vendor.blocks.Mlp import Mlp

model = Mlp(4, 8)
L.trunc_normal_(model.fc1.weight)
