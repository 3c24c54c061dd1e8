from .base import Aggregation
from .basic import MaxAggregation, SumAggregation
from .multi import MultiAggregation

__all__ = ["Aggregation", "SumAggregation", "MaxAggregation", "MultiAggregation"]
