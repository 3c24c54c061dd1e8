from .base import Aggregation


class MultiAggregation(Aggregation):
    def __init__(self, aggrs):
        super().__init__()
        self.aggrs = aggrs

    def reduce(self, x):
        return sum(a.reduce(x) for a in self.aggrs)
