from torch import nn

from .norms import LayerNorm6


class Net(nn.Module):
    def __init__(self, dim=8, norm_layer=LayerNorm6):
        super().__init__()
        self.norm = norm_layer(dim)

    def forward(self, x):
        return self.norm(x)
