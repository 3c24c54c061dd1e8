from torch import nn

from reg.builders import build_model
from reg.registry import Registry

MODELS = Registry("model", build_func=build_model)


@MODELS.register
class Act(nn.Module):
    def forward(self, x):
        return x.relu()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = MODELS.build({"type": "Act"})

    def forward(self, x):
        return self.act(x)
