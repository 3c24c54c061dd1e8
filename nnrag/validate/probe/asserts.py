"""Sandbox child: inputs as the failing ``assert`` of forward wants them.

``assert len(x) == self.nf``: the list ``x`` gets ``self.nf`` items; ``assert hs.dim() == 4
and prompt.dim() == 3``: each named tensor gets that rank; ``assert pe.size(0) == 1``: that
dimension gets that size; ``assert pred.size() == target.size()``: ``target`` gets the shape
of ``pred``.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from torch import nn

from nnrag.validate.probe.profiles import PROFILES
from nnrag.validate.probe.repair_names import failing_line
from nnrag.validate.probe.reshape import reshape_rank

_SIZE = r"(self\.\w+|\d+)"
_LENGTH = re.compile(
    rf"len\((\w+)\)\s*==\s*(?:len\(\w+\)\s*==\s*)*{_SIZE}|{_SIZE}\s*==\s*len\((\w+)\)"
)
"""``len(x) == n``, ``len(x) == len(y) == n``, ``n == len(x)``."""
_RANK = re.compile(
    r"(\w+)\.dim\(\)\s*==\s*(\d)|(\w+)\.ndim\s*==\s*(\d)|len\((\w+)\.shape\)\s*==\s*(\d)"
)
"""``x.dim() == n``, ``x.ndim == n``, ``len(x.shape) == n``."""
_DIM = re.compile(rf"(\w+)\.(?:size\((-?\d)\)|shape\[(-?\d)\])\s*==\s*{_SIZE}")
"""``x.size(0) == 1``, ``x.shape[-1] == self.dim``."""
_SAME = re.compile(r"(\w+)\.(?:size\(\)|shape)\s*==\s*(\w+)\.(?:size\(\)|shape)(?![\w\[(])")
"""``pred.size() == target.size()``, ``a.shape == b.shape``."""


def asserted_inputs(
    error: BaseException,
    block: nn.Module,
    params: list[inspect.Parameter],
    args: list[Any],
    kwargs: dict[str, Any],
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs changed as the failing ``assert`` line says: a list argument made as
    long as it asserts (``n`` a literal or an int attribute of the block; items repeated
    from its last, or cut), tensor arguments given the rank it asserts; ``None`` when the
    assertion is of neither kind or changes nothing."""
    if not isinstance(error, AssertionError):
        return None
    line = failing_line(error)
    if not line.lstrip().startswith("assert"):
        return None
    changes: dict[str, Any] = {}
    for m in _LENGTH.finditer(line):
        name, size = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        count = int(size) if size.isdigit() else getattr(block, size.removeprefix("self."), None)
        if isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= 16:
            for each in [name, *re.findall(r"len\((\w+)\)", m.group(0))]:  # a chain: all
                changes[each] = lambda v, n=count: _resized(v, n)
    for m in _RANK.finditer(line):
        name, rank = next((m.group(i), int(m.group(i + 1))) for i in (1, 3, 5) if m.group(i))
        changes[name] = lambda v, r=rank: _ranked(v, r)
    for m in _DIM.finditer(line):
        size = m.group(4)
        value = int(size) if size.isdigit() else getattr(block, size.removeprefix("self."), None)
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 4096:
            dim = int(m.group(2) or m.group(3))
            changes.setdefault(m.group(1), lambda v, d=dim, n=value: _sized(v, d, n))
    found = dict(_given(params, args, kwargs))
    for m in _SAME.finditer(line):
        model = found.get(m.group(1))
        if isinstance(model, dict) and "shape" in model:
            changes.setdefault(m.group(2), lambda v, s=list(model["shape"]): _shaped(v, s))
    return _apply(changes, params, args, kwargs)


def _given(
    params: list[inspect.Parameter], args: list[Any], kwargs: dict[str, Any]
) -> list[tuple[str, Any]]:
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [*zip(positional, args, strict=False), *kwargs.items()]


def _apply(
    changes: dict[str, Any],
    params: list[inspect.Parameter],
    args: list[Any],
    kwargs: dict[str, Any],
) -> tuple[list[Any], dict[str, Any]] | None:
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    new_args, new_kwargs = list(args), dict(kwargs)
    for name, change in changes.items():
        if name in kwargs:
            new_kwargs[name] = change(kwargs[name])
        elif name in positional and positional.index(name) < len(args):
            i = positional.index(name)
            new_args[i] = change(args[i])
    return None if (new_args, new_kwargs) == (args, kwargs) else (new_args, new_kwargs)


def _resized(value: Any, count: int) -> Any:
    if not isinstance(value, list) or not value:
        return value
    last = value[-1]
    return [dict(v) if isinstance(v, dict) else v for v in value[:count]] + [
        dict(last) if isinstance(last, dict) else last
    ] * max(0, count - len(value))


def _sized(value: Any, dim: int, size: int) -> Any:
    shape = list(value["shape"]) if isinstance(value, dict) and "shape" in value else []
    if not -len(shape) <= dim < len(shape):
        return value
    shape[dim] = size
    return dict(value, shape=shape)


def _shaped(value: Any, shape: list[int]) -> Any:
    if not (isinstance(value, dict) and "shape" in value):
        return value
    return {k: v for k, v in value.items() if k != "data"} | {"shape": list(shape)}


def _ranked(value: Any, rank: int) -> Any:
    if not (isinstance(value, dict) and "shape" in value):
        return value
    shape = reshape_rank(list(value["shape"]), rank, PROFILES[0])
    return dict(value, shape=shape) if shape is not None else value
