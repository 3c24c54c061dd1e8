from torch import nn

from seg.registry import MODELS


@MODELS.register_module()
class DiceLoss(nn.Module):
    """This package's own DiceLoss: a plain 'DiceLoss' would find this one first."""

    def forward(self, pred, target):
        return (pred - target).abs().mean()
