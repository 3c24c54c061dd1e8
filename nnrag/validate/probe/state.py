"""Sandbox child: whether a forward changed a block's own state since it was built."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

_TABLES = ("_parameters", "_buffers", "_modules")
"""Module attributes that are tables of named members: compared member by member."""


class BuiltState:
    """What a block holds right after it was built, to tell whether a forward changed it.

    Kept by reference: every attribute of every submodule (an object that replaced it is
    another object, so a forward that set ``self.queue`` or ``self.step`` shows) and, for
    each tensor among them, its in-place version counter (``weight.copy_(...)`` under
    ``no_grad``, a buffer updated in place). A list or dict attribute changed in place does
    not show. A replay runs one forward on a block as built, so a forward that runs after
    another changed the block must run on the block built again. ``kind``: its class when
    built: a lazy module that became its ``cls_to_become`` is left to the search's lazy
    handling (built again, torch's ``LazyBatchNorm2d`` failed its next forward with a
    ``super()`` TypeError in the sandbox; not yet understood).
    """

    def __init__(self, block: nn.Module) -> None:
        self.block = block
        self.kind = type(block)
        self.held = _held(block)

    def changed(self) -> bool:
        """The block's state is no longer what it was built with."""
        now = _held(self.block)
        return len(now) != len(self.held) or any(
            module is not was or not _same(names, before)
            for (module, names), (was, before) in zip(now, self.held, strict=True)
        )


Held = dict[str, tuple[Any, int]]


def _held(block: nn.Module) -> list[tuple[nn.Module, Held]]:
    """Every submodule with its attributes by name (members of its parameter, buffer and
    module tables as attributes, as ``getattr`` finds them): (value, tensor version or -1)."""
    found: list[tuple[nn.Module, Held]] = []
    for module in block.modules():
        names: Held = {}
        for name, value in vars(module).items():
            if name in _TABLES and isinstance(value, dict):
                names.update((key, (member, _version(member))) for key, member in value.items())
            else:
                names[name] = (value, _version(value))
        found.append((module, names))
    return found


def _same(now: Held, before: Held) -> bool:
    return now.keys() == before.keys() and all(
        value is before[name][0] and version == before[name][1]
        for name, (value, version) in now.items()
    )


def _version(value: object) -> int:
    if isinstance(value, torch.Tensor):
        try:
            return int(value._version)
        except RuntimeError:  # a tensor without storage (a lazy module's uninitialized one)
            return -1
    return -1


__all__ = ["BuiltState"]
