import logging


def build_from_cfg(cfg, registry):
    logging.getLogger(__name__).debug("building %s", cfg)
    return registry._table[cfg["type"]]()


def build_model(cfg, registry):
    return build_from_cfg(cfg, registry)
