import torch
from torch.nn import LayerNorm


class LayerNorm(LayerNorm):
    """LayerNorm over channels-first tensors (same name as its torch base)."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
