from torch import nn


class Mlp(nn.Sequential):
    def __init__(self, dim):
        super().__init__(nn.Linear(dim, dim), nn.GELU())
