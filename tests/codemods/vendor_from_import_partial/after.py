from timm.layers import trunc_normal_
from vendor.blocks.Mlp import Mlp

model = Mlp(4, 8)
trunc_normal_(model.fc1.weight)
