class Registry:
    def __init__(self, name, parent=None, scope="engine"):
        self.name = name
        self.scope = scope
        self.parent = parent
        self.children = {}
        self._entries = {}
        if parent is not None:
            parent.children[scope] = self

    def root(self):
        return self if self.parent is None else self.parent.root()

    def get(self, key):
        scope, dot, name = key.partition(".")
        if dot:  # 'scope.Name': look Name up in the registry of that scope
            root = self.root()
            return root.get(name) if scope == root.scope else root.children[scope].get(name)
        if key in self._entries:
            return self._entries[key]
        if self.parent is not None:
            return self.parent.get(key)
        raise KeyError(f"{key} is not in the {self.scope} registry")

    def build(self, cfg):
        args = dict(cfg)
        return self.get(args.pop("type"))(**args)

    def register_module(self, name=None):
        def _register(cls):
            self._entries[name or cls.__name__] = cls
            return cls

        return _register


MODELS = Registry("model")
