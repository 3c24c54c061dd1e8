from torch import nn

CALLS = 0


def counted(fn):
    count = 0

    def wrapper(*args):
        nonlocal count
        global CALLS
        count += 1
        CALLS = CALLS + 1
        return fn(*args)

    return wrapper


class Net(nn.Module):
    @counted
    def forward(self, x):
        return x
