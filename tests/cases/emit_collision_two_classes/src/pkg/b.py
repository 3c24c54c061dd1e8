from torch import nn


class Mlp(nn.Module):
    """A different Mlp."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        return self.fc(x)
