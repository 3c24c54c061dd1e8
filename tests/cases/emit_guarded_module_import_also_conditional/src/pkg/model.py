from torch import nn

from pkg.transforms import to_numpy


class Net(nn.Module):
    def forward(self, x, from_flax=False):
        if from_flax:
            from pkg.flax_utils import load_flax

            return load_flax(x)
        return to_numpy(x)
