from torch import nn

from .loading import load_everything


class Wrapper(nn.Module):
    """Wraps a module; building one loads a file."""

    def __init__(self, module, path):
        super().__init__()
        self.module = module
        self.config = load_everything(path)


class Unused:
    pass
