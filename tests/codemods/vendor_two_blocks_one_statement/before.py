from timm.layers import DropPath, Mlp, to_2tuple

layers = [Mlp(4), DropPath(0.1), to_2tuple(3)]
