from torch import nn


def default_act():
    return nn.GELU()
