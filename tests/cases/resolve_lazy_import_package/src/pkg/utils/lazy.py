import importlib
import types


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
