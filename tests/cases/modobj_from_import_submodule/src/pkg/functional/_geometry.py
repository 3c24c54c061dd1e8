import torch.nn.functional as F


def resize(x, size):
    return F.interpolate(x, size=size)


def pad(x, amount):
    return F.pad(x, [amount] * 4)
