from importlib import import_module


def build_from_cfg(cfg, registry, **kwargs):
    args = dict(cfg)
    kind = args.pop("type")
    return registry.get(kind)(**args, **kwargs)


class Registry:
    def __init__(self, name, build_func=None, parent=None, scope=None, locations=()):
        self.name = name
        self.parent = parent
        self.locations = locations
        self._module_dict = {}
        self.children = {}
        if parent is not None:
            parent.children[scope] = self
        self.build_func = build_func or build_from_cfg

    def get(self, key):
        for location in self.locations:
            import_module(location)  # fills the registry (the modules register on import)
        if key in self._module_dict:
            return self._module_dict[key]
        if self.parent is not None:
            return self.parent.get(key)
        raise KeyError(f"{key} is not in the {self.name} registry")

    def build(self, cfg, **kwargs):
        return self.build_func(cfg, registry=self, **kwargs)

    def register_module(self, name=None, force=False, module=None):
        if module is not None:
            self._register(module, name, force)
            return module

        def _register(cls):
            self._register(cls, name, force)
            return cls

        return _register

    def _register(self, module, name, force):
        names = name if isinstance(name, (list, tuple)) else [name or module.__name__]
        for key in names:
            if key in self._module_dict and not force:
                raise KeyError(f"{key} is already registered in {self.name}")
            self._module_dict[key] = module
