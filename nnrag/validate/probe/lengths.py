"""Sandbox child: a list input forward asserts the length of (``assert len(x) == self.nf``)."""

from __future__ import annotations

import inspect
import re
from typing import Any

from torch import nn

from nnrag.validate.probe.repair_names import failing_line

_ASSERTED = re.compile(
    r"assert\s+len\((?P<a>\w+)\)\s*==\s*(?P<b>self\.\w+|\d+)"
    r"|assert\s+(?P<c>self\.\w+|\d+)\s*==\s*len\((?P<d>\w+)\)"
)


def asserted_length(
    error: BaseException,
    block: nn.Module,
    params: list[inspect.Parameter],
    args: list[Any],
    kwargs: dict[str, Any],
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs with the list argument that the failing ``assert len(name) == n`` is
    about (``n`` a literal or an int attribute of the block) made ``n`` long: items
    repeated from its last (or cut); ``None`` when the assertion is not of that kind."""
    if not isinstance(error, AssertionError):
        return None
    m = _ASSERTED.search(failing_line(error))
    if m is None:
        return None
    name, size = (m.group("a"), m.group("b")) if m.group("a") else (m.group("d"), m.group("c"))
    count = int(size) if size.isdigit() else getattr(block, size.removeprefix("self."), None)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 16:
        return None
    positional = [
        p.name
        for p in params
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    new_args, new_kwargs = list(args), dict(kwargs)
    if name in kwargs:
        new_kwargs[name] = _resized(kwargs[name], count)
    elif name in positional and positional.index(name) < len(args):
        i = positional.index(name)
        new_args[i] = _resized(args[i], count)
    else:
        return None
    return None if (new_args, new_kwargs) == (args, kwargs) else (new_args, new_kwargs)


def _resized(value: Any, count: int) -> Any:
    if not isinstance(value, list) or not value:
        return value
    return [dict(v) if isinstance(v, dict) else v for v in value[:count]] + [
        dict(value[-1]) if isinstance(value[-1], dict) else value[-1]
    ] * max(0, count - len(value))
