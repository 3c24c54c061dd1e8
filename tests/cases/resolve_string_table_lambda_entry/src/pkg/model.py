"""A block that picks its activation by a configured name."""

from torch import nn

from pkg.activations import get_activation


class MLP(nn.Module):
    def __init__(self, act="gelu_10", size=8):
        super().__init__()
        self.fc = nn.Linear(size, size)
        self.act = get_activation(act)

    def forward(self, x):
        return self.act(self.fc(x))
