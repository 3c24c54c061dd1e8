def build():
    from vendor.blocks.Mlp import Mlp

    return Mlp(4)
