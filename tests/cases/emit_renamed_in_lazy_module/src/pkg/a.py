from __future__ import annotations

from torch import nn


class Block(nn.Module):
    def forward(self, x):
        return x


def make(n: int) -> Block:
    return Block()
