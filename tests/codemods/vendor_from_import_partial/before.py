from timm.layers import Mlp, trunc_normal_

model = Mlp(4, 8)
trunc_normal_(model.fc1.weight)
