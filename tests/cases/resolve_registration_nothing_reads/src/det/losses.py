from torch import nn

from det.registry import MODELS


@MODELS.register_module()
class L1Loss(nn.Module):
    def forward(self, pred, target):
        return (pred - target).abs().mean()
