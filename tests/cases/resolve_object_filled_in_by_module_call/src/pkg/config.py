try:
    from pkg.node import Node

    cfg = Node()
except ImportError:
    cfg = None


def set_defaults(cfg):
    if cfg is None:
        return
    cfg.gnn = Node()
    cfg.gnn.width = 8


def describe(cfg):
    return sorted(cfg)


set_defaults(cfg)
summary = describe(cfg)
print(len(cfg))
