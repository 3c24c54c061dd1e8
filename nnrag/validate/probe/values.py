"""Sandbox child: values to and from JSON for recipes (tensor specs, classes by name)."""

from __future__ import annotations

import importlib
import inspect
import math
import sys
from collections.abc import Mapping
from typing import Any

import torch


def encode(value: object, *, strict: bool = False) -> object:
    """A JSON value describing ``value`` (tensors as specs, classes by qualified name)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, torch.Tensor):
        spec: dict[str, object] = {"shape": list(value.shape), "dtype": str(value.dtype)[6:]}
        if not value.is_floating_point() and value.dtype != torch.bool and value.numel():
            spec["high"] = int(value.max()) + 1
        return spec
    if isinstance(value, (list, tuple)):
        items = [encode(v, strict=strict) for v in value]
        return items if isinstance(value, list) else {"__tuple__": items}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: encode(v, strict=strict) for k, v in value.items()}}
    if isinstance(value, type) or inspect.isfunction(value) or inspect.isbuiltin(value):
        return {"__ref__": f"{value.__module__}:{value.__qualname__}"}
    if strict:
        raise TypeError(f"cannot describe {type(value).__name__}")
    return {"__repr__": repr(value)[:200]}


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
        mod_name, _, qual = str(value["__ref__"]).partition(":")
        target: Any = sys.modules.get(mod_name) or importlib.import_module(mod_name)
        for part in qual.split("."):
            target = getattr(target, part)
        return target
    if "shape" in value:
        return make_tensor(value)
    return value


def seed_cpu(seed: int) -> None:
    """Seed the CPU generator, the only one the sandbox uses.

    ``torch.manual_seed`` also queues CUDA seeding with a formatted stack trace while CUDA
    is not initialized, which cost a fresh sandbox child about 10 ms per block.
    """
    torch.default_generator.manual_seed(seed)


def make_tensor(spec: Mapping[str, Any]) -> torch.Tensor:
    """A tensor for an input spec ``{"shape", "dtype", "high"}``."""
    shape = [int(s) for s in spec["shape"]]
    dtype = getattr(torch, str(spec.get("dtype", "float32")))
    if dtype == torch.bool:
        return torch.ones(shape, dtype=torch.bool)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype)
    return torch.randint(0, max(1, int(spec.get("high", 2))), shape, dtype=dtype)


def tensor_spec(
    shape: list[int], dtype: str = "float32", high: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"shape": shape, "dtype": dtype}
    if high is not None:
        spec["high"] = high
    return spec
