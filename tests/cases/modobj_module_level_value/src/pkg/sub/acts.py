import torch


def relu(x):
    return torch.relu(x)


def gelu(x):
    return torch.nn.functional.gelu(x)


def _helper(x):
    return x
