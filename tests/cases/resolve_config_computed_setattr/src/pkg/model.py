from torch import nn

from .config import WidthConfig


class Block(nn.Module):
    def __init__(self, config: WidthConfig = None):
        super().__init__()
        config = config if config is not None else WidthConfig(num_labels=3)
        self.layer = nn.Linear(config.width, config.num_labels)

    def forward(self, x):
        return self.layer(x)
