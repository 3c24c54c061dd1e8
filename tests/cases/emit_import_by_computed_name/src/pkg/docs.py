"""A decorator that documents a model class when it is defined."""

from pkg.auto import CONFIGS


def with_checkpoint(cls):
    try:
        cls.checkpoint = CONFIGS[cls.model_type].checkpoint
    except KeyError:
        cls.checkpoint = None
    return cls
