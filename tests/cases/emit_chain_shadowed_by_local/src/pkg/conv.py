import torch
from torch import nn

import pkg.backend


class HeteroLinear(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        use_segment_matmul = pkg.backend.use_segment_matmul
        if use_segment_matmul is None:
            use_segment_matmul = x.numel() > 100
        return self.lin(x) if not use_segment_matmul else x
