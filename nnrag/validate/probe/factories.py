"""Sandbox child: parameters the constructor calls (a class passed in, built inside)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

from torch import nn

from nnrag.validate.probe.signatures import init_signature, is_abstract_module, required_count

__all__ = ["factory_for", "none_accepted"]


def factory_for(module: Any, cls: Any, name: str) -> type | None:
    """The block file's module class that accepts the call ``__init__`` makes of parameter
    ``name`` (``self.downsample = downsample(resolution, dim=dim, norm_layer=nn.LayerNorm)``:
    a class passed in to be built there), fewest required parameters first, then by name;
    ``None`` when the constructor does not call the parameter or no class accepts the call."""
    shape = _call_shape(cls, name)
    if module is None or shape is None:
        return None
    count, keywords = shape
    found = []
    for value in list(vars(module).values()):
        if (
            not isinstance(value, type)
            or not issubclass(value, nn.Module)
            or value.__module__ != module.__name__
            or value is cls
            or is_abstract_module(value)
        ):
            continue
        sig, _ = init_signature(value)
        if sig is not None and _accepts(sig, count, keywords):
            found.append(value)
    found.sort(key=lambda c: (required_count(c), c.__qualname__))
    return found[0] if found else None


def none_accepted(cls: Any, name: str) -> bool:
    """Whether ``__init__`` calls parameter ``name`` only where it tests it against ``None``
    (``if downsample is not None: self.downsample = downsample(...)``): ``None`` is a value
    the block handles."""
    tree = _init_tree(cls)
    if tree is None or _call_shape(cls, name) is None:
        return False
    return any(
        isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Name)
        and node.left.id == name
        and isinstance(node.ops[0], (ast.Is, ast.IsNot))
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
        for node in ast.walk(tree)
    )


def _init_tree(cls: Any) -> ast.AST | None:
    init = vars(cls).get("__init__") if isinstance(cls, type) else None
    if init is None:
        return None
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(init))))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None


def _accepts(sig: inspect.Signature, count: int, keywords: tuple[str, ...]) -> bool:
    """Whether the call binds to parameters ``sig`` names (not to ``*args``/``**kwargs``:
    ``nn.Module.__init__(*args, **kwargs)`` takes anything and builds nothing)."""
    params = [p for p in sig.parameters.values() if p.name != "self"]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if count > len(positional) or not set(keywords) <= named:
        return False
    try:
        sig.bind(*([None] * count), **dict.fromkeys(keywords))
    except TypeError:
        return False
    return True


def _call_shape(cls: Any, name: str) -> tuple[int, tuple[str, ...]] | None:
    """(positional count, keyword names) of the first ``name(...)`` call in ``__init__``."""
    tree = _init_tree(cls)
    for node in ast.walk(tree) if tree is not None else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == name
            and not any(isinstance(a, ast.Starred) for a in node.args)
            and all(k.arg is not None for k in node.keywords)
        ):
            return len(node.args), tuple(k.arg for k in node.keywords if k.arg is not None)
    return None
