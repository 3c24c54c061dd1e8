from torch import nn

from .vocab import Vocab


class Tokenizer:
    @classmethod
    def from_file(cls, path):
        return cls(Vocab(path))

    def __init__(self, vocab):
        self.vocab = vocab


def load_tokenizer(path):
    return Tokenizer.from_file(path)


def scale(x):
    return x * 2


class Encoder(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x)
