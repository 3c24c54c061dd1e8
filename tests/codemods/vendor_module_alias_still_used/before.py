import timm.layers as L

model = L.Mlp(4, 8)
L.trunc_normal_(model.fc1.weight)
