_BLOCKS = {}


def register(cls):
    _BLOCKS[cls.__name__.lower()] = cls
    return cls


def build(name, *args):
    return _BLOCKS[name](*args)
