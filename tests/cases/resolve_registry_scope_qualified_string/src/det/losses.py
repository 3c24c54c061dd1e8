import torch
from torch import nn

from det.registry import MODELS


@MODELS.register_module()
class DiceLoss(nn.Module):
    def forward(self, pred, target):
        inter = (pred.sigmoid() * target).sum()
        return 1 - 2 * inter / (pred.sigmoid().sum() + target.sum() + 1e-6)


@MODELS.register_module()
class FocalLoss(nn.Module):
    def forward(self, pred, target):
        return torch.nn.functional.binary_cross_entropy_with_logits(pred, target)
