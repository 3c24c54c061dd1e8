from torch import nn

from lib.gates import gated
from lib.noise import add_noise


class Gate(nn.Module):
    def forward(self, x):
        return add_noise(gated(x))
