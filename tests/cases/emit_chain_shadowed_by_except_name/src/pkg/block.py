from torch import nn

import pkg.backend


class Fused(nn.Module):
    def forward(self, x):
        try:
            return pkg.backend.fused(x)
        except RuntimeError as fused:
            raise ValueError(f"fused kernel failed: {fused}") from fused
