from torch import nn

from pkg.dispatch import dispatch


class Attention(nn.Module):
    def forward(self, x):
        return dispatch(x)
