from torch import nn


class Net(nn.Module):
    import pkg.zlayers as layers

    conv = layers.Conv

    def forward(self, x):
        return x
