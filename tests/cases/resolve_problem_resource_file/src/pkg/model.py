import json
import os

from torch import nn


def load_table():
    with open(os.path.join(os.path.dirname(__file__), "table.json")) as f:
        return json.load(f)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = load_table()

    def forward(self, x):
        return x
