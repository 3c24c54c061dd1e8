"""Sandbox child: whether a forward error came from inside a placeholder (a module built from
a constructor argument the probe could only stand in for), so the failure names the
placeholder, not the inputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.registries import Carried


def failed_in_placeholders(error: BaseException, block: nn.Module, ctor: Ctor) -> list[str]:
    """The placeholder arguments of ``ctor`` whose module the error's traceback passes
    through (a frame whose ``self`` is it: its forward, or the call into it that its
    signature refused). Empty: the error is the block's own.

    A placeholder module is the module given for the argument, or, for a registry config
    dict, a submodule of exactly the class the dict names (the file's one registered
    class of another kind: a data preprocessor given as the ``decoder``)."""
    stand_ins = _stand_ins(ctor)
    if not stand_ins:
        return []
    inside = [m for m in block.modules() if m is not block]
    selves = _frame_selves(error)
    found: list[str] = []
    for name, target in stand_ins.items():
        if isinstance(target, nn.Module):
            hit = any(s is target for s in selves)
        else:
            hit = any(type(s) is target and any(s is m for m in inside) for s in selves)
        if hit:
            found.append(name)
    return found


def _stand_ins(ctor: Ctor) -> dict[str, object]:
    """Each top-level placeholder argument: its module, or the class its config dict names."""
    found: dict[str, object] = {}
    for name in ctor.placeholders:
        value = ctor.kwargs.get(name)
        if isinstance(value, nn.Module):
            found[name] = value
        elif isinstance(value, Mapping) and isinstance(key := value.get(Carried.key), str):
            cls = next((t[key] for t in Carried.tables.values() if key in t), None)
            if isinstance(cls, type):
                found[name] = cls
    return found


def _frame_selves(error: BaseException) -> list[Any]:
    """The ``self`` of every frame of the error's traceback."""
    selves: list[Any] = []
    tb = error.__traceback__
    while tb is not None:
        value = tb.tb_frame.f_locals.get("self")
        if value is not None:
            selves.append(value)
        tb = tb.tb_next
    return selves
