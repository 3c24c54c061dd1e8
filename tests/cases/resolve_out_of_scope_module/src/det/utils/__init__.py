from .misc import make_divisible

__all__ = ["make_divisible"]
