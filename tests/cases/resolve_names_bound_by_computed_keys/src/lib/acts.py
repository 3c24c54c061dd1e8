import torch
from torch import nn


class Tagged:
    """What every wrapped activation gains."""

    tag = "lib"


class ReLU(nn.ReLU, Tagged):
    """Defined here: the loop finds it and keeps it."""

    tag = "own"


__all__ = ["ReLU", "Tanh"]  # noqa: F822

# Wrap every activation of torch.nn that this module does not define itself.
for _name in ("ReLU", "Sigmoid", "Tanh"):
    try:
        _wrapped = locals()[_name]
    except KeyError:
        _wrapped = type(_name, (getattr(nn, _name), Tagged), {})
        globals()[_name] = _wrapped
    __all__.append(_name)

__all__ = sorted(set(__all__))

# A second loop of the same module: the names are bound once both have run.
for _name in ("Hardtanh",):
    globals().update({_name: type(_name, (getattr(nn, _name), Tagged), {})})
