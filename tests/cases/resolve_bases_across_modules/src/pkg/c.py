from .b import Middle


class Net(Middle):
    def step(self, x):
        return super().step(x) * 2
