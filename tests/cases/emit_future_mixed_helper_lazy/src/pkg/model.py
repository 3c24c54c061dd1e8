import torch
from torch import nn

from .config import Config


class Net(nn.Module):
    def __init__(self, cfg: Config = Config()):
        super().__init__()
        self.cfg = cfg

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cfg.apply(x)
