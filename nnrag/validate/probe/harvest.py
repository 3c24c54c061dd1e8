"""Sandbox child: records the real constructor and forward arguments of a file's own classes."""

from __future__ import annotations

import functools
from typing import Any

from torch import nn

from nnrag.validate.probe.values import encode, ref, remember


class Harvester:
    """Wraps ``__init__``/``forward`` of the file's own classes to record real arguments."""

    def __init__(self, module: Any, skip: type) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.saved: list[tuple[type, str, Any]] = []
        self.paused = False
        for value in list(vars(module).values()):
            if (
                isinstance(value, type)
                and issubclass(value, nn.Module)
                and value.__module__ == module.__name__
                and value is not skip
            ):
                self.wrap(value)

    def wrap(self, cls: type) -> None:
        """Wrap ``cls``'s ``__init__`` and ``forward``. A class without one of its own gets a
        wrapper that calls what comes after it in the *instance's* MRO, resolved at call time:
        fixing the method found at wrap time would shadow a later base's (a mixin without
        ``forward`` listed before ``nn.Sequential`` would hide ``Sequential.forward``)."""
        owner: Any = cls
        own_init, own_forward = cls.__dict__.get("__init__"), cls.__dict__.get("forward")
        records = self.records
        harvester = self

        def init(self_: Any, *args: Any, **kwargs: Any) -> None:
            if own_init is not None:
                own_init(self_, *args, **kwargs)
            else:
                super(owner, self_).__init__(*args, **kwargs)

        def forward(self_: Any, *args: Any, **kwargs: Any) -> Any:
            if own_forward is not None:
                return own_forward(self_, *args, **kwargs)
            later: Any = super(owner, self_)  # the next class in the instance's MRO
            return later.forward(*args, **kwargs)

        @functools.wraps(own_init or owner.__init__)
        def wrapped_init(self_: Any, *args: Any, **kwargs: Any) -> None:
            try:
                seen = {
                    "init_args": [encode(a, strict=True) for a in args],
                    "init_kwargs": {k: encode(v, strict=True) for k, v in kwargs.items()},
                }
            except TypeError:
                seen = None
            init(self_, *args, **kwargs)
            if type(self_) is cls and seen is not None:
                self_.__dict__["_nnrag_init"] = seen
                expression = {"__call__": ref(cls), "args": seen["init_args"]}
                remember(self_, {**expression, "kwargs": seen["init_kwargs"]})

        @functools.wraps(own_forward or owner.forward)
        def wrapped_forward(self_: Any, *args: Any, **kwargs: Any) -> Any:
            seen = self_.__dict__.get("_nnrag_init") if type(self_) is cls else None
            if seen is None or harvester.paused or cls.__name__ in records:
                return forward(self_, *args, **kwargs)
            try:
                inputs = {
                    "inputs": [encode(a, strict=True) for a in args],
                    "input_kwargs": {k: encode(v, strict=True) for k, v in kwargs.items()},
                }
            except Exception:  # recording must never fail the block: this call goes unrecorded
                inputs = None
            out = forward(self_, *args, **kwargs)
            if inputs is not None:
                records[cls.__name__] = {"class": cls.__name__, **seen, **inputs}
            return out

        self.saved.append((cls, "__init__", cls.__dict__.get("__init__")))
        self.saved.append((cls, "forward", cls.__dict__.get("forward")))
        owner.__init__ = wrapped_init
        owner.forward = wrapped_forward

    def restore(self) -> None:
        for cls, name, original in reversed(self.saved):
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)
