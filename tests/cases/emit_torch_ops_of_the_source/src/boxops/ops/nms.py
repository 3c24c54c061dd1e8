import torch
from torch import nn

from boxops.extension import HAS_OPS


def nms(boxes, scores, threshold):
    return torch.ops.boxops.nms(boxes, scores, threshold)


class Suppress(nn.Module):
    """The compiled operator where the extension loaded, plain PyTorch otherwise."""

    def __init__(self, threshold=0.5):
        super().__init__()
        self.threshold = threshold

    def forward(self, boxes, scores):
        if HAS_OPS:
            return nms(boxes, scores, self.threshold)
        return torch.ops.aten.argsort(scores, descending=True)


class FusedSuppress(nn.Module):
    """The compiled operator on every path."""

    def __init__(self, threshold=0.5):
        super().__init__()
        self.threshold = threshold

    def forward(self, boxes, scores):
        return nms(boxes, scores, self.threshold)
