"""Activation classes and the string table that names them."""

import torch
from torch import nn

from pkg.heavy import erf_table


class GELUActivation(nn.Module):
    def forward(self, x):
        return nn.functional.gelu(x)


class ClippedGELU(nn.Module):
    def __init__(self, low, high):
        super().__init__()
        self.low, self.high = low, high

    def forward(self, x):
        return torch.clip(nn.functional.gelu(x), self.low, self.high)


class TableGELU(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.tensor(erf_table(16)))

    def forward(self, x):
        return x * self.table.mean()


class SiLUActivation(nn.Module):
    def forward(self, x):
        return nn.functional.silu(x)


ACT2CLS = {
    "gelu": GELUActivation,
    "gelu_10": (ClippedGELU, {"low": -10, "high": 10}),
    "gelu-table": TableGELU,  # a key that is no identifier
    "silu": SiLUActivation, "swish": SiLUActivation,
    "relu": nn.ReLU,
    "linear": None,
}


def get_activation(name):
    value = ACT2CLS[name]
    if isinstance(value, tuple):
        cls, kwargs = value
        return cls(**kwargs)
    return value()
