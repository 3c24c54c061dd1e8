from torch import nn


class Base(nn.Module):
    widths = {1: 4, 2: 8}

    def __init__(self, depth=1):
        super().__init__()
        self.proj = nn.Linear(4, 4)


class Unused:
    pass
