from .base import Delegating, Dispatching


class Block(Dispatching):
    def __init__(self):
        super().__init__()
        self.wrapped = Delegating()

    def forward(self, x):
        return self.wrapped.unwrap()(self.run("scale", x))
