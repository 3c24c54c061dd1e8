F = 0.5


def half(x):
    return x * F
