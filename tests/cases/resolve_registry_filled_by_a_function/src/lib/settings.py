"""Settings of lib, each registered by the module that defines it.

Registered: {registered}
"""

from importlib import import_module

_template = __doc__
_REGISTRY = {}


def get(alias):
    module, deepname, validator = _REGISTRY[alias]
    value = import_module(module)
    for name in deepname.split("."):
        value = getattr(value, name)
    return value


def register(alias, modulename, deepname, validator=None):
    global __doc__
    _REGISTRY[alias] = modulename, deepname, validator
    __doc__ = _template.format(registered=", ".join(sorted(_REGISTRY)))
    if validator is None:
        return lambda function: register(alias, modulename, deepname, function)
    validator(get(alias))
    return validator
