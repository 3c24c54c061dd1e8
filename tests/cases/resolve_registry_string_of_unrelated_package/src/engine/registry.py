class Registry:
    def __init__(self, name):
        self.name = name
        self._module_dict = {}

    def get(self, key):
        return self._module_dict[key]

    def build(self, cfg):
        args = dict(cfg)
        return self.get(args.pop("type"))(**args)

    def register_module(self, name=None):
        def _register(cls):
            self._module_dict[name or cls.__name__] = cls
            return cls

        return _register


MODELS = Registry("model")
