from .linear import Linear
from .module import Module

__all__ = ["Linear", "Module"]
