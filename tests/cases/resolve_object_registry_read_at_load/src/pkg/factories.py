from torch import nn


class LayerFactory:
    def __init__(self, name):
        self.name = name
        self.factories = {}

    def factory_function(self, key):
        def register(func):
            self.factories[key.upper()] = func
            return func

        return register

    def add_factory_class(self, key, cls):
        self.factories[key.upper()] = lambda: cls

    def __getattr__(self, key):
        if key in self.__dict__.get("factories", {}):
            return key
        raise AttributeError(key)

    def __getitem__(self, key):
        return self.factories[key]()


Act = LayerFactory("activations")
Act.add_factory_class("relu", nn.ReLU)
Unrelated = LayerFactory("unrelated")


@Act.factory_function("gelu")
def gelu_factory():
    return nn.GELU


@Unrelated.factory_function("x")
def unrelated_factory():
    return nn.Identity
