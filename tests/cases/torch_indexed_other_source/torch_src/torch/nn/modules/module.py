class Module:
    """The root of every block (here without any base of its own)."""

    def __init__(self):
        self._modules = {}

    def forward(self, *args):
        raise NotImplementedError

    def __call__(self, *args):
        return self.forward(*args)
