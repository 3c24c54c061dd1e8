from torch import nn

from engine.registry import MODELS
from names.display import display_name


class Head(nn.Module):
    def __init__(self, act_cfg=dict(type="Swish")):
        super().__init__()
        self.act = MODELS.build(act_cfg)
        self.title = display_name("swish")

    def forward(self, x):
        return self.act(x)
