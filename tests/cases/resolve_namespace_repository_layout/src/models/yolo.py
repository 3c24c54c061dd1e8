import torch.nn as nn

from models.common import Conv
from utils import general


class Detect(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.stem = Conv(ch, general.make_divisible(ch * 2))

    def forward(self, x):
        return self.stem(x)
