from timm.layers import (
    trunc_normal_,  # init
)
from vendor.blocks.Mlp import (
    Mlp,  # the MLP
)
from vendor.blocks.DropPath import (
    DropPath  # no trailing comma
)
from timm.layers import (to_2tuple)
from vendor.blocks.Mlp import (Mlp as M2)

layers = [Mlp(4), DropPath(0.1), M2(2)]
trunc_normal_(to_2tuple(1))
