"""Sandbox child: the other value of a boolean option that guards a failing constructor line."""

from __future__ import annotations

import re

from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.repair_names import failing_line
from nnrag.validate.probe.signatures import signature_of


def flip_guard(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: the constructor line that raised is guarded by a boolean option of ``cls``
    (``ConvMlp(...) if use_mlp else nn.Identity()``, ``if self.use_mlp:``): try the option's
    other value, a configuration the block supports without the failing part.

    Only options with a boolean default; the first one the line tests, once (a candidate
    that already flipped it is not flipped back)."""
    if ctor.origin != "synthesized":
        return None
    line = failing_line(error)
    sig = signature_of(cls)
    if not line or sig is None:
        return None
    for name, param in sig.parameters.items():
        if not isinstance(param.default, bool) or name in ctor.kwargs:
            continue
        if re.search(rf"\b(if|elif|and|or|not)\s+(self\.)?{re.escape(name)}\b", line):
            return ctor.with_kwargs({name: not param.default})
    return None
