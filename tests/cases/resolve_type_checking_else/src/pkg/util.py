import importlib


def optional(name):
    try:
        return importlib.import_module(name), True
    except ImportError:
        return None, False
