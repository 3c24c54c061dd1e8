from torch import nn

# the source package
import timm.layers as L


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = DropPath(0.1)
        self.drop2 = DropPath(0.2)
        self.init = L.trunc_normal_
