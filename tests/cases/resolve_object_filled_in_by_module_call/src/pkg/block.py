from torch import nn

from pkg.config import cfg


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(cfg.gnn.width, cfg.gnn.width)

    def forward(self, x):
        return self.proj(x)
