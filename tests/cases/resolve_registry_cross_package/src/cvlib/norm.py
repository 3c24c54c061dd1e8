from torch import nn

from engine.root import MODELS

MODELS.register_module("BN", module=nn.BatchNorm2d)
MODELS.register_module("GN", module=nn.GroupNorm)
MODELS.register_module(module=nn.LayerNorm)


def build_norm_layer(cfg, num_features):
    args = dict(cfg)
    layer_type = args.pop("type")
    return MODELS.get(layer_type)(num_features, **args)
