import timm.layers.mlp

block = timm.layers.mlp.Mlp(4)
