from torch import nn

from .util import padded


class Net(nn.Module):
    def __init__(self, dim=10.4):
        super().__init__()
        self.fc = nn.Linear(padded(dim), round(dim))

    def forward(self, x):
        return self.fc(x)
