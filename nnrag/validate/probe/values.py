"""Sandbox child: values to and from JSON constructor expressions (the recipe notation).

A recipe value is plain JSON that rebuilds the value exactly:

- scalars and strings as themselves; ``{"__float__": "nan"}`` for non-finite floats;
- ``{"__tuple__": [...]}``, ``{"__dict__": {...}}`` (string keys), lists as lists; a mapping
  of another type or with other keys as its type called on ``[key, value]`` pairs;
- ``{"__ref__": "module:Qualname"}`` for a class, function or enum member (block-local
  names live in module ``nnrag_block``, the block file as the sandbox loads it);
- ``{"__call__": <ref>, "args": [...], "kwargs": {...}, "__set__": {...}, "__seed__": n}``
  for an object built by a call (then attributes set; the CPU generator seeded first);
- tensors: small ones by value ``{"shape", "dtype", "data"}``, others as a spec
  ``{"shape", "dtype", "high"?, "positive"?}`` drawn from the seeded generator (inputs), or as the
  expression that made them (``torch:eye``).

What cannot be written so is ``{"__repr__": ...}`` and makes the recipe lossy.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import math
import os
import random
import sys
import tempfile
from collections.abc import Mapping
from typing import Any, TypeVar

import torch

T = TypeVar("T")

SMALL_TENSOR = 256
"""Tensors with at most this many elements are recorded by value."""

_MADE: dict[int, tuple[object, dict[str, Any]]] = {}
"""Objects the probe built, by id, with the expression that built them (kept alive)."""


def remember(value: T, expression: Mapping[str, Any]) -> T:
    """Record that ``value`` was built by ``expression`` (so :func:`encode` can write it)."""
    _MADE[id(value)] = (value, dict(expression))
    return value


def forget_all() -> None:
    """Drop every remembered construction (one block's run is over)."""
    _MADE.clear()


def ref(value: object) -> dict[str, str]:
    """``{"__ref__": "module:Qualname"}`` of a class, function or enum member."""
    if isinstance(value, enum.Enum):
        owner = type(value)
        return {"__ref__": f"{owner.__module__}:{owner.__qualname__}.{value.name}"}
    module = getattr(value, "__module__", None)
    name = getattr(value, "__name__", "")
    if getattr(sys.modules.get(module or ""), name, None) is value:  # torch.eye, not its qualname
        return {"__ref__": f"{module}:{name}"}
    return {"__ref__": f"{module}:{getattr(value, '__qualname__', name)}"}


def call(
    target: object,
    args: tuple[object, ...] | list[object] = (),
    kwargs: Mapping[str, object] | None = None,
    *,
    seed: int | None = None,
) -> dict[str, Any]:
    """The expression for ``target(*args, **kwargs)`` (values encoded)."""
    expression: dict[str, Any] = {"__call__": ref(target), "args": [encode(a) for a in args]}
    if kwargs:
        expression["kwargs"] = {k: encode(v) for k, v in kwargs.items()}
    if seed is not None:
        expression["__seed__"] = seed
    return expression


def encode(value: object, *, strict: bool = False) -> object:
    """A JSON value that rebuilds ``value`` (see the module docstring).

    ``strict``: raise ``TypeError`` instead of writing a lossy ``{"__repr__": ...}``.
    """
    made = _MADE.get(id(value))
    if made is not None and made[0] is value:
        return made[1]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, enum.Enum):
        return ref(value)
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        items = [encode(v, strict=strict) for v in value]
        return items if isinstance(value, list) else {"__tuple__": items}
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: encode(v, strict=strict) for k, v in value.items()}}
    if isinstance(value, type) or inspect.isfunction(value) or inspect.isbuiltin(value):
        return ref(value)
    built = _constructed(value, strict)
    if built is not None:
        return built
    if isinstance(value, (torch.dtype, torch.device)):
        return {"__call__": ref(_by_name), "args": [str(value)]}
    if strict:
        raise TypeError(f"cannot describe {type(value).__name__}")
    return {"__repr__": repr(value)[:200]}


def _constructed(value: object, strict: bool) -> dict[str, Any] | None:
    """A constructor call for values whose fields are their constructor's arguments:
    named tuples, dataclasses (``init`` fields), mappings of other types (``OrderedDict``) or
    with keys other than strings (a ``dict`` keyed by tuples)."""
    owner = type(value)
    try:
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return {"__call__": ref(owner), "args": [encode(v, strict=strict) for v in value]}
        if dataclasses.is_dataclass(value):
            fields = [f for f in dataclasses.fields(value) if f.init]
            kwargs = {f.name: encode(getattr(value, f.name), strict=strict) for f in fields}
            return {"__call__": ref(owner), "args": [], "kwargs": kwargs}
        if isinstance(value, Mapping):  # any keys: ``dict([[("a", "to", "b"), v]])``
            pairs = [[encode(k, strict=strict), encode(v, strict=strict)] for k, v in value.items()]
            return {"__call__": ref(owner), "args": [pairs]}
    except TypeError:
        if strict:
            raise
    return None


def _tensor(value: torch.Tensor) -> dict[str, object]:
    dtype = str(value.dtype).removeprefix("torch.")
    if value.numel() <= SMALL_TENSOR and value.layout == torch.strided and not value.is_complex():
        return {"shape": list(value.shape), "dtype": dtype, "data": value.detach().cpu().tolist()}
    spec: dict[str, object] = {"shape": list(value.shape), "dtype": dtype}
    if (
        not value.is_floating_point()
        and not value.is_complex()  # no order, no ``max``
        and value.dtype != torch.bool
        and value.numel()
    ):
        spec["high"] = int(value.max()) + 1
    return spec


def _by_name(text: str) -> object:
    """``torch.float32`` / ``cpu`` from their string form (for dtype and device values)."""
    if text.startswith("torch."):
        return getattr(torch, text.removeprefix("torch."))
    return torch.device(text)


def lossy(value: object) -> list[str]:
    """Where an encoded value lost information (``{"__repr__": ...}`` parts), as short paths."""
    found: list[str] = []

    def walk(item: object, path: str) -> None:
        if isinstance(item, list):
            for i, v in enumerate(item):
                walk(v, f"{path}[{i}]")
        elif isinstance(item, dict):
            if "__repr__" in item:
                found.append(path or "value")
                return
            for k, v in item.items():
                walk(v, f"{path}.{k}" if path else str(k))

    walk(value, "")
    return found


def resolve(name: str) -> Any:
    """The object a ``module:Qualname`` reference names (importing the module if needed)."""
    mod_name, _, qual = name.partition(":")
    target: Any = sys.modules.get(mod_name) or importlib.import_module(mod_name)
    for part in filter(None, qual.split(".")):
        target = getattr(target, part)
    return target


def decode(value: object, module: object = None) -> object:
    """Rebuild a value from :func:`encode` output (tensor specs become seeded tensors)."""
    if isinstance(value, list):
        return [decode(v, module) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tuple__" in value:
        return tuple(decode(v, module) for v in value["__tuple__"])
    if "__dict__" in value:
        return {k: decode(v, module) for k, v in value["__dict__"].items()}
    if "__ref__" in value:
        return resolve(str(value["__ref__"]))
    if "__float__" in value:
        return float(str(value["__float__"]))
    if "__call__" in value:
        return _call(value, module)
    if "shape" in value:
        return make_tensor(value)
    return value


def _call(value: Mapping[str, Any], module: object) -> object:
    target = decode(value["__call__"], module)
    if not callable(target):
        raise TypeError(f"recipe expression calls {target!r}, which is not callable")
    args = [decode(a, module) for a in value.get("args", ())]
    kwargs = {k: decode(v, module) for k, v in (value.get("kwargs") or {}).items()}
    if value.get("__seed__") is not None:
        seed_cpu(int(value["__seed__"]))
    built = target(*args, **kwargs)
    for name, item in (value.get("__set__") or {}).items():
        setattr(built, name, decode(item, module))
    return remember(built, value)


def text_file(name: str, lines: list[str]) -> str:
    """The path of a text file of ``lines`` in the child's temporary folder (``name`` names
    it): a character or vocabulary list for a parameter that names one."""
    path = os.path.join(tempfile.gettempdir(), f"nnrag-{name}.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))
    return path


def seed_cpu(seed: int) -> None:
    """Seed every generator a block on the CPU draws from: torch's CPU generator, Python's
    ``random`` and, when the block imported it, NumPy's global one (a random crop drawn with
    ``random.uniform`` replays the same crop).

    ``torch.manual_seed`` also queues CUDA seeding with a formatted stack trace while CUDA
    is not initialized, which cost a fresh sandbox child about 10 ms per block.
    """
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)


def make_tensor(spec: Mapping[str, Any]) -> torch.Tensor:
    """A tensor for a spec: by value (``data``), else ``{"shape", "dtype", "high"}`` drawn
    (floats with a ``high``: whole numbers below it, 0/1 targets; with ``"positive": true``:
    in ``(0.1, 1]``)."""
    shape = [int(s) for s in spec["shape"]]
    dtype = getattr(torch, str(spec.get("dtype", "float32")))
    if "data" in spec:
        return torch.tensor(spec["data"], dtype=dtype).reshape(shape)
    if dtype == torch.bool:
        return torch.ones(shape, dtype=torch.bool)
    if dtype.is_floating_point and spec.get("positive"):  # in (0.1, 1]: a log or a root of it
        return 1 - 0.9 * torch.rand(shape, dtype=dtype)
    if (dtype.is_floating_point or dtype.is_complex) and "high" not in spec:
        return torch.randn(shape, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randint(0, max(1, int(spec["high"])), shape).to(dtype)
    return torch.randint(0, max(1, int(spec.get("high", 2))), shape, dtype=dtype)


def tensor_spec(
    shape: list[int], dtype: str = "float32", high: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"shape": shape, "dtype": dtype}
    if high is not None:
        spec["high"] = high
    return spec
