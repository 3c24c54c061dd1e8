import torch
from torch import nn


def emulate_int8_tensor(w, scale):
    return torch.round(w / scale) * scale


def emulate_int8_channel(w, scale):
    return torch.round(w / scale.view(-1, 1)) * scale.view(-1, 1)


def emulate_int4_tensor(w, scale):
    return torch.round(w * 2 / scale) * scale / 2


def unrelated_helper(w):
    return w.sum()


def emulate_int(w, bits, method, scale):
    return globals()[f"emulate_int{bits}_{method}"](w, scale)


class QuantLinear(nn.Linear):
    def __init__(self, in_features, out_features, bits=8, method="tensor"):
        super().__init__(in_features, out_features)
        self.bits, self.method = bits, method

    def forward(self, x):
        weight = emulate_int(self.weight, self.bits, self.method, torch.tensor(0.1))
        return nn.functional.linear(x, weight, self.bias)
