import inspect
import sys
from importlib import import_module


class Registry:
    def __init__(self, name, parent=None, scope=None, locations=()):
        self.name = name
        self.locations = locations
        self.imported = False
        self.children = {}
        self._entries = {}
        if scope is not None:
            self.scope = scope
        else:
            self.scope = self.infer_scope()
        self.parent = parent
        if parent is not None:
            assert self.scope not in parent.children, f"scope {self.scope} exists in {name}"
            parent.children[self.scope] = self

    @staticmethod
    def infer_scope():
        """The top-level package of the module that constructs the registry."""
        module = inspect.getmodule(sys._getframe(2))
        if module is None:
            return "core"
        parts = module.__name__.split(".")
        return parts[0]

    def get(self, key):
        if not self.imported:
            self.imported = True
            for location in self.locations:
                import_module(location)  # the modules that fill this registry
            if not self.locations and self.parent is not None:
                import_module(f"{self.scope}.plugins")  # unlocated child: its package's plugins
        if key in self._entries:
            return self._entries[key]
        if self.parent is not None:
            return self.parent.get(key)
        raise KeyError(f"{key} is not in the {self.name} registry")

    def build(self, cfg):
        args = dict(cfg)
        return self.get(args.pop("type"))(**args)

    def register_module(self, name=None):
        def _register(cls):
            self._entries[name or cls.__name__] = cls
            return cls

        return _register
