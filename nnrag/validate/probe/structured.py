"""Sandbox child: structured values read from source: the string keys code reads from a dict,
a module argument whose output is such a dict (a real small stand-in that returns one), and
callables kept for later."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from nnrag.validate.probe.signatures import globals_of
from nnrag.validate.probe.values import call, remember


def source_tree(func: Any) -> ast.FunctionDef | None:
    """The ``def`` of ``func`` as parsed from its source (``None`` when it has none)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.FunctionDef) else None


def dict_keys(func: Any) -> dict[str, list[str]]:
    """String keys ``func`` reads from each name (``x["low"]``, ``x.get("high")``)."""
    node = source_tree(func)
    return {} if node is None else _keys_read(node)


def _keys_read(node: ast.AST) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    for sub in ast.walk(node):
        target, key = None, None
        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name):
            target, key = sub.value.id, sub.slice
        elif (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in {"get", "pop"}
            and isinstance(sub.func.value, ast.Name)
            and sub.args
        ):
            target, key = sub.func.value.id, sub.args[0]
        if target and isinstance(key, ast.Constant) and isinstance(key.value, str):
            found = keys.setdefault(target, [])
            if key.value not in found:
                found.append(key.value)
    return keys


def _self_attr(node: ast.AST) -> str | None:
    """``A`` of ``self.A``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "self" else None
    return None


def output_keys(cls: type, name: str) -> list[str]:
    """The string keys ``cls.forward`` reads from what the module stored from parameter
    ``name`` returns (``features = self.backbone(x); features["out"]``), or that a layer the
    constructor builds reads from it when forward passes it on (``self.head(features)``,
    whose forward reads ``input["low"]``). Empty: the output is not read as a dict."""
    init = source_tree(vars_init(cls))
    forward = source_tree(getattr(cls, "forward", None))
    if init is None or forward is None:
        return []
    stored, built = {name}, {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            attr = _self_attr(node.targets[0])
            if attr is None:
                continue
            if isinstance(node.value, ast.Name) and node.value.id == name:
                stored.add(attr)
            elif isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                built[attr] = node.value.func.id
    outputs = {
        node.targets[0].id
        for node in ast.walk(forward)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
        and _self_attr(node.value.func) in stored
    }
    read = _keys_read(forward)
    keys = [key for out in sorted(outputs) for key in read.get(out, [])]
    scope = globals_of(vars_init(cls))
    for node in ast.walk(forward):  # ``self.head(features)``: the keys the head reads
        if not (isinstance(node, ast.Call) and node.args and _self_attr(node.func) in built):
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Name) and first.id in outputs):
            continue
        keys.extend(_first_argument_keys(scope.get(built[str(_self_attr(node.func))])))
    return list(dict.fromkeys(keys))


def _first_argument_keys(layer: object) -> list[str]:
    """The keys a module class's ``forward`` reads from its first argument."""
    if not (isinstance(layer, type) and issubclass(layer, nn.Module)):
        return []
    node = source_tree(layer.forward)
    if node is None or len(node.args.args) < 2:
        return []
    return _keys_read(node).get(node.args.args[1].arg, [])


class Keyed(nn.Module):
    """A real small module that returns a dict: under each of ``keys`` its input scaled by a
    learned factor of its own (so each output has the input's shape and a gradient)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__()
        self.keys = list(keys)
        self.scales = nn.Parameter(torch.ones(len(self.keys)))

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {key: x * self.scales[i] for i, key in enumerate(self.keys)}


def keyed(keys: list[str]) -> Keyed:
    """A :class:`Keyed` recorded as its constructor call."""
    return remember(Keyed(keys), call(Keyed, [list(keys)]))


def kept_for_later(cls: type, name: str) -> bool:
    """Whether ``__init__`` only stores parameter ``name`` (``self.transforms = transforms``)
    and never calls it: a callable the block applies in forward, not a factory it builds
    layers with."""
    init = source_tree(vars_init(cls))
    if init is None:
        return False
    stored = called = False
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id == name
            and any(_self_attr(t) is not None for t in node.targets)
        ):
            stored = True
        elif isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (
                any(isinstance(a, ast.Name) and a.id == name for a in node.args)
                and not (isinstance(node.func, ast.Name) and node.func.id in _INSPECTING)
            )
        ):
            called = True
    return stored and not called


_INSPECTING = {"isinstance", "len", "callable", "type", "list", "tuple", "iter", "all", "any"}
"""Builtins that look at a value without building anything from it."""


_BOUNDS = re.compile(r"^(min|max)_(\w+)$|^(\w+)_(min|max)$")


def spread_bounds(kwargs: Mapping[str, object]) -> dict[str, object]:
    """Synthesized ``min_X``/``max_X`` (or ``X_min``/``X_max``) integers that came out equal:
    the maximum doubled, so a range between them is not empty."""
    out: dict[str, object] = {}
    for name, value in kwargs.items():
        m = _BOUNDS.match(name)
        if m is None or not _is_int(value):
            continue
        if m.group(1) == "max" or m.group(4) == "max":
            stem = m.group(2) or m.group(3)
            low = kwargs.get(f"min_{stem}", kwargs.get(f"{stem}_min"))
            if _is_int(low) and low == value and isinstance(value, int) and value > 0:
                out[name] = 2 * value
    return out


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def vars_init(cls: type) -> object:
    """``cls``'s ``__init__``, its own or inherited."""
    return getattr(cls, "__init__", None)
