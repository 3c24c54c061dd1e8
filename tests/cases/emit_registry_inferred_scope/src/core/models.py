from core.registry import Registry

MODELS = Registry("model")


@MODELS.register_module()
class Scale:
    def __init__(self, factor=2):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor
