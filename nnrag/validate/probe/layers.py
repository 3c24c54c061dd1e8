"""What a module's own layers say about its input: the first shape-defining layer."""

from __future__ import annotations

from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin


def first_layer(module: nn.Module) -> tuple[str, int, list[int]]:
    """(kind, size, extra) from the first shape-defining layer of ``module`` (lazy layers,
    which take their sizes from their first input, define none)."""
    for layer in module.modules():
        if isinstance(layer, LazyModuleMixin):
            continue  # its sizes come from its first input (0 until then)
        if isinstance(layer, (nn.Conv2d, nn.ConvTranspose2d)):
            return "image", layer.in_channels, []
        if isinstance(layer, (nn.Conv1d, nn.ConvTranspose1d)):
            return "signal", layer.in_channels, []
        if isinstance(layer, (nn.Conv3d, nn.ConvTranspose3d)):
            return "volume", layer.in_channels, []
        if isinstance(layer, (nn.BatchNorm2d, nn.InstanceNorm2d)) and layer.num_features:
            return "image", layer.num_features, []
        if isinstance(layer, nn.GroupNorm):
            return "image", layer.num_channels, []
        if isinstance(layer, nn.BatchNorm1d):
            return "flat", layer.num_features, []
        if isinstance(layer, nn.Linear):
            return "tokens", layer.in_features, []
        if isinstance(layer, nn.MultiheadAttention):
            return "tokens", layer.embed_dim, []
        if isinstance(layer, nn.RNNBase):
            return "tokens", layer.input_size, []
        if isinstance(layer, nn.LayerNorm):
            shape = list(layer.normalized_shape)
            return "tokens", shape[-1], shape[:-1]
        if isinstance(layer, nn.Embedding):
            return "ids", layer.num_embeddings, []
    return "unknown", 0, []
