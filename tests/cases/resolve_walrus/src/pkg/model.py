from torch import nn

LIMIT = 10


def clip_count(values):
    return [y for v in values if (y := v * 2) < LIMIT]


class Net(nn.Module):
    def forward(self, x):
        if (n := len(clip_count([1, 2, 3]))) > 0:
            return x * n
        return x
