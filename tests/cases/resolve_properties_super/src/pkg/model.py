from torch import nn


def _count(module):
    return sum(p.numel() for p in module.parameters())


class Base(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)


class Net(Base):
    def __init__(self, dim=4):
        super().__init__(dim)

    @property
    def size(self):
        return _count(self)

    def forward(self, x):
        return self.fc(x)
