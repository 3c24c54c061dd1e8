def scale(x):
    return 2 * x


def chunked(x):
    return x
