def round(x, step=8):
    return int(x + step - 1) // step * step


def padded(x):
    return round(x)
