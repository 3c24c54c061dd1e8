from torch import nn

FACTOR = 3
STAGES = 4


class Net(nn.Module):
    sizes = [FACTOR * i for i in range(STAGES)]
    scale = staticmethod(lambda x: x * FACTOR)

    def forward(self, x):
        return self.scale(x) + sum(self.sizes)
