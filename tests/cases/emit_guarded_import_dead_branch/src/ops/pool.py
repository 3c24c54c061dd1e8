import torch
from torch import nn

if torch.__version__ == "parrots":
    from parrots.nn import AdaptivePool as _Pool
else:
    from torch.nn import AdaptiveAvgPool2d as _Pool


class GlobalPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = _Pool(1)

    def forward(self, x):
        return self.pool(x)
