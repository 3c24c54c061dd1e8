from torch import nn
from hubclient_absent import validate_args

from .docs import add_doc
from .hub import download


class Base(nn.Module):
    @classmethod
    @validate_args
    def from_pretrained(cls, name):
        return cls(download(name))

    @add_doc("Saves the weights.")
    def save(self, path):
        return download(path)

    @add_doc("Doubles.")
    def scale(self, x):
        return x * 2
