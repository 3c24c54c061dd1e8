from torch import nn

WIDTH, DEPTH = 8, 2
UNUSED = 3


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return self.fc(x)
