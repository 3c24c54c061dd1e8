import torch.nn.functional as F
from torch import nn

from .consts import half


class Net(nn.Module):
    def forward(self, x):
        return F.relu(half(x))
