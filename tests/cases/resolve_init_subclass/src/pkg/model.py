from .base import Registered


class Net(Registered):
    def forward(self, x):
        return x
