def build():
    from timm.layers import Mlp

    return Mlp(4)
