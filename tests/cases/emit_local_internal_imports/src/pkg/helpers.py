def scale(x):
    return x * 2


def shift(x):
    return x + 1
