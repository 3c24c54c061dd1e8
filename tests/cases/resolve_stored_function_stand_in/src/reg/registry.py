class Registry:
    def __init__(self, name, build_func=None):
        from .builders import build_from_cfg

        self.name = name
        self._table = {}
        if build_func is None:
            self.build_func = build_from_cfg
        else:
            self.build_func = build_func

    def register(self, cls):
        self._table[cls.__name__] = cls
        return cls

    def build(self, cfg):
        return self.build_func(cfg, self)
