import math
import os.path
from collections import OrderedDict as OD

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.scale = math.sqrt(dim)
        self.layers = OD(a=nn.Linear(dim, dim))
        self.root = os.path.sep

    def forward(self, x):
        return F.relu(self.layers["a"](x)) * torch.tensor(self.scale)
