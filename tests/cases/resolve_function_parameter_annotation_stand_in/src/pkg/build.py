from typing import Optional, Union

from torch import nn

from .settings import Settings


def build_layer(cfg: Union[dict, Settings], default: Optional["Settings"] = None) -> nn.Module:
    if isinstance(cfg, Settings):
        cfg = cfg.to_dict()

    def make(inner: Settings = None, *rest: Settings, **named: Settings) -> nn.Module:
        return nn.Linear(cfg["width"], cfg["width"])

    return make()
