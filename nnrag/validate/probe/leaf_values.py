"""Sandbox child: leaf values a parameter's name asks for (small real layers, tensors, strings)."""

from __future__ import annotations

import re

import torch
from torch import nn

from nnrag.validate.probe import values as probe_values
from nnrag.validate.probe.profiles import Profile

call = probe_values.call
remember = probe_values.remember

LINEAR_NAMES = re.compile(r"^(\w+_)?(nn|mlp|ffn|lin|linear)$")
"""Module arguments a real lazy ``Linear`` stands in for (``nn``, ``mlp``, ``gate_nn``)."""


_LIST_FILE_NAMES = re.compile(r"(dict|vocab|char|alphabet|token|word|label|class)\w*_(file|path)$")
"""Paths of a list the block reads line by line (``dict_file``, ``vocab_path``): a file of
characters, one per line."""


class LeafValues:
    """The by-name leaves of :class:`~nnrag.validate.probe.args.Synth`: layer classes, real
    small layers, tensors and strings over one size profile."""

    profile: Profile
    placeholders: list[str]
    applied: set[str]

    def tensor(self, name: str) -> torch.Tensor:
        """A small tensor for a tensor-typed argument: index pairs, masks, square matrices."""
        low = name.lower()
        size = self.profile.dim
        if "index" in low:
            return torch.randint(0, 8, (2, 16))
        if "mask" in low:
            return torch.ones(size, dtype=torch.bool)
        if re.search(r"matrix|weight|adj", low):
            return remember(torch.eye(size), call(torch.eye, [size]))
        return torch.ones(size)

    def string_for(self, name: str) -> str:
        low = name.lower()
        if "act" in low:
            return "relu"
        if "norm" in low:
            return "batchnorm" if self.profile.norm == "batch" else "layernorm"
        if "pad" in low:
            return "same"
        if "mode" in low:
            return "nearest"
        if low.endswith(("_name", "_key")):  # a key of a ModuleDict or a table
            return "default"
        if _LIST_FILE_NAMES.search(low):  # ``dict_file``: one character per line
            stem, lines = re.sub(r"\W", "_", name), [*"0123456789abcdefghijklmnopqrstuvwxyz"]
            try:
                path = probe_values.text_file(stem, lines)
            except OSError:  # no writable temporary folder: the path stays unknown
                return ""
            return remember(path, call(probe_values.text_file, [stem, lines]))
        return ""

    def layer_factory(self, name: str) -> object:
        low = name.lower()
        if "norm" in low:
            return nn.BatchNorm2d if self.profile.norm == "batch" else nn.LayerNorm
        if "act" in low:
            return nn.ReLU
        if "conv" in low:
            return nn.Conv2d
        if LINEAR_NAMES.search(low):
            return self.linear(name)
        self.placeholders.append(name)
        if name in self.applied:  # applied to data in forward: a callable module, not a class
            return remember(nn.Identity(), call(nn.Identity))
        return nn.Identity

    def layers(self, name: str) -> object:
        """An ``nn.Sequential`` of one 1x1 convolution over the profile width (its child
        named ``"0"``, the name a synthesized key gives), seeded."""
        del name
        width = self.profile.dim
        probe_values.seed_cpu(0)
        conv = remember(nn.Conv2d(width, width, 1), call(nn.Conv2d, [width, width, 1], seed=0))
        return remember(nn.Sequential(conv), call(nn.Sequential, [conv]))

    def linear(self, name: str) -> object:
        """A real lazy ``Linear`` to the profile width for ``nn``/``mlp``/``gate_nn`` arguments."""
        del name
        return remember(nn.LazyLinear(self.profile.dim), call(nn.LazyLinear, [self.profile.dim]))

    def kind_module(self, name: str) -> object | None:
        """A real small ``torch.nn`` module for a module argument named by its kind
        (activation, dropout, normalization over the profile width), or ``None``."""
        low = name.lower()
        made: tuple[type[nn.Module], list[object]] | None = None
        if re.search(r"act|nonlin", low):
            made = nn.ReLU, []
        elif re.search(r"drop", low):
            made = nn.Dropout, [0.0]
        elif re.search(r"norm", low):
            made = (nn.BatchNorm2d, [self.profile.dim])
            if self.profile.norm != "batch":
                made = (nn.LayerNorm, [self.profile.dim])
        elif re.search(r"pool", low):
            made = nn.AdaptiveAvgPool2d, [1]
        if made is None:
            return None
        owner, args = made
        return remember(owner(*args), call(owner, args))
