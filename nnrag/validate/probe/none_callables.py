"""Sandbox child: a layer for a ``None``-defaulted parameter that forward calls by the name
it was stored under (``self.crpe(q, v)`` with ``self.crpe = shared_crpe``)."""

from __future__ import annotations

import re

from torch import nn

from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.repair_names import failing_line
from nnrag.validate.probe.signatures import signature_of
from nnrag.validate.probe.values import call, remember

_NOT_CALLABLE = "'NoneType' object is not callable"
_SELF_CALL = re.compile(r"\bself\.(\w+)\s*\(")


def fill_none_callables(ctor: Ctor, cls: type, error: BaseException | None) -> Ctor | None:
    """Repair: forward raised "'NoneType' object is not callable" on a line that calls
    ``self.crpe(...)``, and a parameter left at its ``None`` default is named for it
    (``crpe``, ``shared_crpe``; any annotation, ``Optional[Any]`` too): it gets a placeholder
    layer (which a passing forward makes real, as a module parameter's)."""
    if ctor.origin != "synthesized" or error is None or _NOT_CALLABLE not in str(error):
        return None
    called = set(_SELF_CALL.findall(failing_line(error)))
    sig = signature_of(cls)
    if not called or sig is None:
        return None
    filled = {
        name: remember(nn.Identity(), call(nn.Identity))
        for name, param in sig.parameters.items()
        if param.default is None
        and name not in ctor.kwargs
        and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
        and any(name == attr or name.endswith("_" + attr) for attr in called)
    }
    if not filled:
        return None
    return ctor.with_placeholders(filled)


__all__ = ["fill_none_callables"]
