from torch import nn

# the source package
import timm.layers as L
import timm.layers.drop


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = L.DropPath(0.1)
        self.drop2 = timm.layers.drop.DropPath(0.2)
        self.init = L.trunc_normal_
