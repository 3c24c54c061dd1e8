from torch import nn

import pkg._C


class Net(nn.Module):
    def forward(self, x):
        return pkg._C.fused(x)
