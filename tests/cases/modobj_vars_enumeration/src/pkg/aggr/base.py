from torch import nn


class Aggregation(nn.Module):
    def forward(self, x):
        return self.reduce(x)
