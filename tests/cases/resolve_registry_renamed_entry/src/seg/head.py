from torch import nn

from det.losses import L1Loss as DetL1Loss
from det.registry import MODELS as DET_MODELS
from seg.registry import MODELS


class Head(nn.Module):
    def __init__(self, channels=8, loss_cfg=dict(type="L1Loss")):
        super().__init__()
        self.conv = nn.Conv2d(channels, 1, 1)
        self.loss = MODELS.build(loss_cfg)
        self.aux_loss = DetL1Loss()
        assert DET_MODELS.get("L1Loss") is DetL1Loss

    def forward(self, x, target):
        out = self.conv(x)
        return self.loss(out, target) + self.aux_loss(out, target)
