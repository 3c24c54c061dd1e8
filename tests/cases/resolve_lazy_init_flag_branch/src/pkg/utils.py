import importlib
import os
import types

SLOW_IMPORT = os.environ.get("PKG_SLOW_IMPORT", "0") == "1"


def is_fast_available():
    return importlib.util.find_spec("fastlib_absent") is not None


class LazyModule(types.ModuleType):
    def __init__(self, name, structure):
        super().__init__(name)
        self._structure = structure

    def __getattr__(self, name):
        for module, names in self._structure.items():
            if name in names:
                value = getattr(importlib.import_module("." + module, self.__name__), name)
                setattr(self, name, value)
                return value
        raise AttributeError(name)
