from typing import List, Union

from torch import nn

from .wrappers import Head, Wrapper

Wrappers = List[Wrapper]


def unwrap(module, others: Wrappers = ()) -> Union[nn.Module, Wrapper]:
    return module.module if isinstance(module, (Wrapper,)) else module


class Block(nn.Module):
    def __init__(self, inner: nn.Module = None):
        super().__init__()
        self.inner = unwrap(inner if inner is not None else nn.Identity())
        self.head = nn.Identity() if isinstance(self.inner, Head.Base) else None

    def forward(self, x):
        return self.inner(x) * 2
