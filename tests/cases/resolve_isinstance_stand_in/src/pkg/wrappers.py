from torch import nn

from .loading import load_everything


class Wrapper(nn.Module):
    """Wraps a module; building one loads a file."""

    def __init__(self, module, path):
        super().__init__()
        self.module = module
        self.config = load_everything(path)


class Head(nn.Module):
    """Its nested class is tested against: the class itself is carried."""

    class Base(nn.Module):
        pass


class Unused:
    pass
