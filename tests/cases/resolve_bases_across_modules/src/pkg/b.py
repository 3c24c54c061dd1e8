from .a import Root


class Middle(Root):
    def step(self, x):
        return super().step(x) + 1
