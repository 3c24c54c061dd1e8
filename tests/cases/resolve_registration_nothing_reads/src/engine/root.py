from .registry import Registry

MODELS = Registry("model")
