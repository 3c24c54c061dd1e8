from torch import nn

FACTOR = 3


def outer(x):
    total = 0

    def inner(y):
        nonlocal total
        total += y * FACTOR
        return total

    return [inner(v) for v in x if (w := v) is not None]


class Net(nn.Module):
    table = {k: FACTOR * k for k in range(3)}
    fn = staticmethod(lambda v: v * FACTOR)

    def forward(self, x):
        return outer(x)
