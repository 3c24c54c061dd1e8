def f(x):
    return x + 1

class Z:
    pass
