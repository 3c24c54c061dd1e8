from torch import nn

from .config import NetConfig


class Net(nn.Module):
    def __init__(self, cfg: NetConfig = NetConfig()):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(cfg.dim, d) for d in cfg.layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
