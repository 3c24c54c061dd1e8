__all__ = ["LOOKUP"]

WIDTHS = {"small": 4, "large": 8}
DEPTHS = {"small": 1, "large": 2}


def unused():
    return WIDTHS
