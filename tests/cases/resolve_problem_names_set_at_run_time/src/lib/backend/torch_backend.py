import torch


def relu(x):
    return torch.relu(x)


def scale(x):
    return 2 * x
