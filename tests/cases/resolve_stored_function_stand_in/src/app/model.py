from torch import nn

from reg.builders import build_model
from reg.registry import Registry

MODELS = Registry("model", build_model)
TASKS = Registry("task")


@MODELS.register
class Net(nn.Module):
    def forward(self, x):
        return x

    def registered(self):
        return sorted(MODELS._table)
