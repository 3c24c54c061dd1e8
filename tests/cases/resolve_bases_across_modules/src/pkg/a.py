from torch import nn


class Root(nn.Module):
    def forward(self, x):
        return self.step(x)

    def step(self, x):
        return x
