from torch import nn

from .hub import save


class Dispatching(nn.Module):
    """Looks methods up by a computed name: every method may run, so it is kept whole."""

    def run(self, action, *args):
        return getattr(self, f"do_{action}")(*args)

    def do_scale(self, x):
        return x * 2

    def do_save(self, path):
        save(path, {})


class Delegating(nn.Module):
    """A __getattr__ override and a name held in a class attribute: pruned as usual."""

    inner_name = "inner"

    def __init__(self):
        super().__init__()
        self.inner = nn.Identity()

    def __getattr__(self, name):
        return super().__getattr__(name)

    def unwrap(self):
        return getattr(self, self.inner_name, self)

    def archive(self, path):
        save(path, {"archived": True})
