from torch import nn

from timm.layers import DropPath as DP  # regularization


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = DP(0.1)
