"""Sandbox child: a multi-level first input (a feature pyramid) from the constructor's list of
per-level input channels (``in_channels=[16, 32, 64]``: one feature map per entry)."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Mapping
from typing import Any

_LEVEL_CHANNELS = re.compile(r"^in_?(channels?|chans|channel_list|planes|dims)$")
"""Constructor arguments that, given as a list, give each input level's channels."""
_LEVEL_INDEX = re.compile(r"^in_?(index|indices|idx)$")
"""Constructor arguments that, given as a list, pick the levels the block reads."""
_ONE_TENSOR = re.compile(r"^(torch\.)?Tensor$|^<class 'torch\.Tensor'>$")
MAX_LEVELS = 8


def level_channels(ctor: Mapping[str, object]) -> list[int] | None:
    """The channels of each input level: the first list of two or more positive integers
    given to an ``in_channels``-like constructor argument, placed at the levels a list of
    integers given to an ``in_index``-like argument picks (the levels it skips get the first
    entry's channels); ``None`` when no such list was given."""
    channels = _first_list(ctor, _LEVEL_CHANNELS, least=2, low=1)
    if channels is None or len(channels) > MAX_LEVELS:
        return None
    picked = _first_list(ctor, _LEVEL_INDEX, least=1, low=0)
    if picked is None or len(picked) != len(channels):
        return channels
    levels = [channels[0]] * (max(picked) + 1)
    for at, count in zip(picked, channels, strict=True):
        levels[at] = count
    return levels if len(levels) <= MAX_LEVELS else channels


def level_maps(channels: list[int], side: int) -> list[dict[str, Any]]:
    """One ``(2, C_i, S_i, S_i)`` float map per level, highest resolution first, each level
    half the side of the one before (the first side grows until the last is at least 2)."""
    top = max(side, 2 ** len(channels))
    return [
        {"shape": [2, count, top >> i, top >> i], "dtype": "float32"}
        for i, count in enumerate(channels)
    ]


def takes_levels(params: list[inspect.Parameter]) -> bool:
    """Whether ``forward``'s first argument can be a list of maps: positional, required and
    not annotated as one tensor."""
    first = next((p for p in params if p.kind != p.VAR_KEYWORD), None)
    if first is None or first.kind == first.KEYWORD_ONLY:
        return False
    if first.kind != first.VAR_POSITIONAL and first.default is not first.empty:
        return False
    text = first.annotation if isinstance(first.annotation, str) else repr(first.annotation)
    return first.annotation is first.empty or _ONE_TENSOR.match(text.strip("'\" ")) is None


def level_inputs(
    params: list[inspect.Parameter], ctor: Mapping[str, object], side: int, block: object = None
) -> list[dict[str, Any]] | None:
    """The first input as a feature pyramid (:func:`level_maps`) when forward's first
    argument can take a list (:func:`takes_levels`) and the constructor was given per-level
    channels (:func:`level_channels`), or one channel count while forward picks levels from
    that argument by the block's own indices (:func:`indexed_levels`); ``None`` otherwise."""
    if not takes_levels(params):
        return None
    channels = level_channels(ctor)
    if channels is None and block is not None:
        count = indexed_levels(block, params[0].name)
        single = next(
            (v for k, v in ctor.items() if _LEVEL_CHANNELS.match(k) and _positive(v)), None
        )
        channels = [int(single)] * count if count and isinstance(single, int) else None
    return None if channels is None else level_maps(channels, side)


def ctor_defaults(block: object) -> dict[str, object]:
    """The default values of the block's constructor arguments (empty when unreadable)."""
    try:
        sig = inspect.signature(type(block))
    except (TypeError, ValueError):
        return {}
    return {k: p.default for k, p in sig.parameters.items() if p.default is not p.empty}


def indexed_levels(block: object, name: str, *, hops: int = 3) -> int | None:
    """How many levels ``forward`` needs in its argument ``name`` when it (or a method of
    the block it hands ``name`` to, ``hops`` calls deep) picks them by the block's own
    integer indices: ``name[self.in_index]`` or ``[name[i] for i in self.in_index]``
    (index ``-1`` needs one level, ``2`` three); ``None`` when it does not."""
    found: list[int] = []
    todo, seen = [(getattr(type(block), "forward", None), name, hops)], set()
    while todo:
        func, arg, left = todo.pop()
        tree = _tree(func)
        if tree is None or (func, arg) in seen:
            continue
        seen.add((func, arg))
        for node in ast.walk(tree):
            found.extend(_picked(block, node, arg))
            if left and isinstance(node, ast.Call) and _self_attr(node.func) is not None:
                at = [i for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == arg]
                method = getattr(type(block), str(_self_attr(node.func)), None)
                names = _arg_names(method)
                todo.extend((method, names[i], left - 1) for i in at if i < len(names))
    return max((i + 1 if i >= 0 else -i) for i in found) if found else None


def _picked(block: object, node: ast.AST, arg: str) -> list[int]:
    """The block's integer indices ``node`` picks items of ``arg`` by."""
    attr = None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        attr = _self_attr(node.slice) if node.value.id == arg else None
    elif isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
        gen, elt = node.generators[0], node.elt
        if (
            isinstance(elt, ast.Subscript)
            and isinstance(elt.value, ast.Name)
            and elt.value.id == arg
            and isinstance(elt.slice, ast.Name)
            and isinstance(gen.target, ast.Name)
            and gen.target.id == elt.slice.id
        ):
            attr = _self_attr(gen.iter)
    value = getattr(block, attr, None) if attr else None
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, (list, tuple)) and all(type(v) is int for v in value):
        return [int(v) for v in value]
    return []


def _tree(func: object) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, ast.FunctionDef) else None


def _arg_names(func: object) -> list[str]:
    """A method's argument names after ``self``."""
    tree = _tree(func)
    return [] if tree is None else [a.arg for a in tree.args.args[1:]]


def _self_attr(node: ast.AST) -> str | None:
    """``A`` of ``self.A``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "self" else None
    return None


def _positive(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _first_list(
    ctor: Mapping[str, object], names: re.Pattern[str], *, least: int, low: int
) -> list[int] | None:
    """The first value given to an argument ``names`` matches that is a list or tuple of at
    least ``least`` integers, each ``>= low``."""
    for key, value in ctor.items():
        if (
            names.match(key)
            and isinstance(value, (list, tuple))
            and len(value) >= least
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value)
        ):
            return [int(v) for v in value]
    return None
