__all__ = ["scale"]


def scale(x):
    return x * 2


def _private(x):
    return x
