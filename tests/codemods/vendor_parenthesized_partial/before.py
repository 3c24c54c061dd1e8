from timm.layers import (
    trunc_normal_,  # init
    Mlp,  # the MLP
    DropPath  # no trailing comma
)
from timm.layers import (Mlp as M2, to_2tuple)

layers = [Mlp(4), DropPath(0.1), M2(2)]
trunc_normal_(to_2tuple(1))
