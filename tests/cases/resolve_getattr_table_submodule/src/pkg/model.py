from torch import nn

from .tables import lookup


class Net(nn.Module):
    def __init__(self, size="small"):
        super().__init__()
        self.proj = nn.Linear(lookup("width", size), 2)

    def forward(self, x):
        return self.proj(x)
