from torch import nn

from .util import tokens

try:
    from .text import Tokenizer, count
except ImportError:
    Tokenizer = None


class Net(nn.Module):
    def forward(self, x):
        return x * tokens("a b")
