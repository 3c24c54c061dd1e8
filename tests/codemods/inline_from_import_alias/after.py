from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = DropPath(0.1)
