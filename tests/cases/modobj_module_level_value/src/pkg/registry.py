def lookup(module, name):
    return getattr(module, name)
