from torch import nn

from seg.registry import MODELS


class Head(nn.Module):
    def __init__(self, channels=8, loss_cfg=dict(type="det.DiceLoss")):
        super().__init__()
        self.conv = nn.Conv2d(channels, 1, 1)
        self.loss = MODELS.build(loss_cfg)

    def forward(self, x, target):
        return self.loss(self.conv(x), target)
