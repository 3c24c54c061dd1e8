from torch import nn

from pkg.coders import decode, encode


class Net(nn.Module):
    def forward(self, x):
        return decode(encode(x), limit=1.0)
