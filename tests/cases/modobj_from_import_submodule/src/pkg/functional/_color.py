def invert(x):
    return 1 - x
