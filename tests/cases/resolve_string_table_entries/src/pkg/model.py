"""A block that picks its activation by a configured name."""

from torch import nn

from pkg.activations import get_activation


class Config:
    def __init__(self, hidden_act="gelu_10", hidden_size=8):
        self.hidden_act = hidden_act
        self.hidden_size = hidden_size


class MLP(nn.Module):
    def __init__(self, config=None, gate="silu"):
        super().__init__()
        config = config or Config()
        self.fc = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = get_activation(config.hidden_act)
        self.gate = get_activation(gate)

    def forward(self, x):
        return self.act(self.fc(x)) * self.gate(x)
