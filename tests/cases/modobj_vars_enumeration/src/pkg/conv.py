from torch import nn

from pkg.resolver import aggregation_resolver


class Conv(nn.Module):
    def __init__(self, aggr="sum"):
        super().__init__()
        self.aggr = aggregation_resolver(aggr)

    def forward(self, x):
        return self.aggr(x)
