import torch
from torch import nn

from lib.symbolic import fit_symbol


class Fit(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        globals()["self.proj_0"] = self.proj  # a method's write: binds nothing as the module loads

    def forward(self, x):
        return self.proj(x) + fit_symbol(x)

    def formula(self, simplify_output=False):
        if simplify:  # research code: the parameter was renamed, this read was not
            return "simplified"
        return "raw"
