"""Sandbox child: items of a synthesized nested list by the names the code unpacks them into
(``for k, exp_size, c, se_ratio, s in cfg``: a kernel size, a width, a ratio, a stride)."""

from __future__ import annotations

import re
import sys

from nnrag.validate.probe.args import Synth
from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.profiles import PROFILES
from nnrag.validate.probe.repair_names import failing_line

_UNPACK = re.compile(r"not enough values to unpack \(expected (\d+), got (\d+)\)")
_TARGETS = re.compile(r"^\s*(?:for\s+)?\(?\s*(\w+(?:\s*,\s*\w+)+)\s*,?\s*\)?\s*(?:=|\bin\b)")
"""The names of a tuple target at the start of a line: ``for a, b in x`` or ``a, b = x``."""

SHORT_NAMES = {
    "k": "kernel_size",
    "s": "stride",
    "c": "channels",
    "e": "expand_ratio",
    "t": "expand_ratio",
    "n": "num_blocks",
    "g": "groups",
}
"""The one-letter names architecture tables conventionally unpack their columns into."""


def unpacked_names(line: str, count: int) -> list[str] | None:
    """The ``count`` names ``line`` unpacks into (``for k, c, s in cfg:``), else ``None``."""
    found = _TARGETS.match(line)
    if found is None:
        return None
    names = [n.strip() for n in found.group(1).split(",")]
    return names if len(names) == count else None


def named_items(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: "not enough values to unpack (expected 5, got 2)" raised by a line that
    unpacks into names (``for k, exp_size, c, se_ratio, s in cfg``) gives the innermost
    synthesized lists one item per name, each a value by that name (one-letter names as
    their conventional meaning, :data:`SHORT_NAMES`), rather than copies of one size."""
    m = _UNPACK.search(str(error))
    if ctor.origin != "synthesized" or m is None:
        return None
    want, got = int(m.group(1)), int(m.group(2))
    names = unpacked_names(failing_line(error), want)
    if names is None:
        return None
    synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
    row = [synth.field(SHORT_NAMES.get(name.lower(), name)) for name in names]

    def fill(value: object) -> object:
        if not isinstance(value, (list, tuple)):
            return value
        if value and all(not isinstance(v, (list, tuple)) for v in value):
            return list(row) if len(value) == got else value
        filled = [fill(v) for v in value]
        return tuple(filled) if isinstance(value, tuple) else filled

    changed = {
        k: fill(v) for k, v in ctor.kwargs.items() if isinstance(v, (list, tuple)) and fill(v) != v
    }
    return ctor.with_kwargs(changed) if changed else None


__all__ = ["SHORT_NAMES", "named_items", "unpacked_names"]
