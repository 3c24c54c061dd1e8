import math

import torch
from torch import nn

try:
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover - scipy is optional
    def _erf(x):
        return math.erf(x)


class Net(nn.Module):
    def forward(self, x):
        return x * _erf(0.5)
