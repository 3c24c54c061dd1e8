try:
    from .base import Base, Unused

    class Net(Base):
        def __init__(self, depth=1):
            super().__init__(depth)
            self.width = Base.widths[depth]

        def forward(self, x):
            return self.proj(x)

except ImportError:
    Net = None
