from torch import nn

from engine.registry import MODELS


class ConvAct(nn.Module):
    def __init__(self, channels=4, act_cfg=dict(type="ReLU"), inplace=True):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        act_cfg = dict(act_cfg)
        if act_cfg["type"] not in ["Tanh", "GELU"]:  # these take no inplace argument
            act_cfg.setdefault("inplace", inplace)
        self.act = MODELS.build(act_cfg)

    def forward(self, x):
        return self.act(self.conv(x))
