from .base import Base


class Net(Base):
    def forward(self, x):
        return self.scale(x)
