"""Sandbox child: config objects' fields (keys of tables, sizes in lists, fields a class lacks)."""

from __future__ import annotations

import ast
import contextlib
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

from nnrag.validate.probe.profiles import HEADS, Profile, int_for
from nnrag.validate.probe.signatures import init_signature, required_count
from nnrag.validate.probe.values import call, encode, remember

__all__ = [
    "build_small",
    "fill_missing",
    "give_keys",
    "key_fields",
    "shrink",
    "shrink_list",
    "shrink_parts",
]

_KEYS: dict[int, tuple[Any, dict[str, str]]] = {}


def key_fields(module: Any) -> dict[str, str]:
    """Fields the block file uses as the key of a table (``TABLE[config.attn_impl]``), each
    with the string to give it where it is ``None`` (a ``None`` key fails the lookup): the
    string the code compares it unequal with (``if config.attn_impl != "eager":
    TABLE[config.attn_impl]``: the path the code takes by default), else the table's first
    string key (``CLASSES = {"eager": ..., "sdpa": ...}``)."""
    if module is None:
        return {}
    known = _KEYS.get(id(module))
    if known is not None and known[0] is module:
        return known[1]
    found: dict[str, str] = {}
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError, ValueError):
        tree = None
    if tree is not None:
        unequal: dict[str, str] = {}
        tables: dict[str, str] = {}
        scope = vars(module)
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute):
                (op, *_), (right, *_) = node.ops, node.comparators
                text = right.value if isinstance(right, ast.Constant) else None
                if isinstance(op, ast.NotEq) and isinstance(text, str) and text:
                    unequal.setdefault(node.left.attr, text)
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and isinstance(node.slice, ast.Attribute)
            ):
                table = scope.get(node.value.id)
                keys = list(table) if isinstance(table, Mapping) else []
                first = next((k for k in keys if isinstance(k, str) and k), "")
                tables.setdefault(node.slice.attr, first)
        for attr, first in tables.items():
            value = unequal.get(attr) or first
            if value:
                found[attr] = value
    _KEYS[id(module)] = (module, found)
    return found


def give_keys(config: object, module: Any) -> None:
    """Give each ``None`` field of ``config`` that the block file uses as a table key the
    string :func:`key_fields` chose for it."""
    for attr, value in key_fields(module).items():
        with contextlib.suppress(Exception):
            if getattr(config, attr, None) is None:
                setattr(config, attr, value)


def fill_missing(config: object, reads: set[str], field: Callable[[str], object]) -> None:
    """Set each public attribute of ``reads`` that ``config`` lacks to ``field(name)`` where
    that is plain data (a placeholder object would not survive the config's own code: its
    ``repr`` writes JSON)."""
    for attr in sorted(reads):
        if attr.startswith("_") or hasattr(config, attr):
            continue
        with contextlib.suppress(Exception):
            value = field(attr)
            if _plain(value):
                setattr(config, attr, value)


def _plain(value: object) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, (bool, int, float, str))


def shrink_list(name: str, value: list[Any] | tuple[Any, ...], profile: Profile) -> object:
    """A list of sizes with the length kept: per-stage heads, depths and layer counts
    (``num_heads=[3, 6, 12, 24]``: they divide per-stage widths) all set to the profile's
    size for the name, other items reduced like a single size (only those over 8, so
    strides and kernel sizes stay); ``value`` when nothing changes."""
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    size = int_for(re.sub(r"s$", "", name), profile)
    if not isinstance(size, int) or size <= 0:
        return value
    if _PER_STAGE.search(name.lower()):  # one size for every stage: heads divide widths
        return value if all(v == size for v in value) else type(value)([size] * len(value))
    if all(v <= max(size, 8) for v in value):
        return value
    return type(value)(v if v <= max(size, 8) else size for v in value)


_PER_STAGE = re.compile(r"heads?$|depths?$|layers$|blocks$")
_HEADS = re.compile(HEADS)
"""Attention head counts: a small one (``encoder_attention_heads = 6``) is set to the
profile's too, since the widths it divides are shrunk (a big one already is)."""


def build_small(
    cls: type, args: tuple[object, ...], kwargs: dict[str, object], profile: Profile
) -> tuple[object, dict[str, object], dict[str, object]]:
    """``cls(*args, **kwargs)`` shrunk: the sizes its constructor takes are passed to it (so
    the fields it derives from them follow: ``hidden_size = embed_dim * 2 ** (stages - 1)``,
    ``num_layers = len(depths)``, and are left as derived); a constructor that takes none of
    them gets its fields shrunk after the call. Returns the instance, the keyword
    arguments of its constructor call, and its fields right after that call (what later
    changes are recorded against)."""
    built = cls(*args, **kwargs)
    before = dict(vars(built))
    wanted = shrink(built, profile)
    sig, _ = init_signature(cls)
    named = {
        p.name
        for p in (sig.parameters.values() if sig else ())
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    through = {k: v for k, v in wanted.items() if k in named and k not in kwargs}
    if not through:
        return built, kwargs, before
    default = cls(*args, **kwargs)
    try:
        rebuilt = cls(*args, **{**kwargs, **through})
    except Exception:
        return built, kwargs, dict(vars(default))
    return rebuilt, {**kwargs, **through}, dict(vars(rebuilt))


_SPATIAL = re.compile(r"img|image|resolution|input_size")
"""Input sizes a config keeps: a model's patches, windows and stages are laid out for its
image size (a smaller one leaves a stage smaller than its attention window)."""


def shrink(config: object, profile: Profile) -> dict[str, object]:
    """Reduce big size-like integer attributes of a config object (and lists of them) to the
    profile's sizes, except input sizes (:data:`_SPATIAL`); return the attributes changed."""
    try:
        items = dict(vars(config))
    except TypeError:
        return {}
    before = dict(items)
    for name, value in items.items():
        if _SPATIAL.search(name.lower()):
            continue
        new: object = value
        count = isinstance(value, int) and not isinstance(value, bool)
        if count and _HEADS.search(name.lower()) and profile.heads < value <= 8:
            new = profile.heads  # 6 heads must divide the width shrunk to the profile's
        elif isinstance(value, int) and not isinstance(value, bool) and value < 0:
            size = int_for(name, profile)  # dim_in = -1: "set me" sizes
            if isinstance(size, int) and size > 0:
                new = size
        elif isinstance(value, int) and not isinstance(value, bool) and value > 8:
            size = int_for(name, profile)
            if isinstance(size, int) and size < value:
                new = size
        elif isinstance(value, int) and re.search(r"layers|depth|blocks", name) and value > 2:
            new = 2
        elif isinstance(value, (list, tuple)):
            new = shrink_list(name, value, profile)
        if new is not value:
            with contextlib.suppress(Exception):
                setattr(config, name, new)
    after = getattr(config, "__dict__", {})
    return {k: after[k] for k in before if k in after and after[k] != before[k]}


def shrink_parts(config: object, profile: Profile, module: Any) -> None:
    """Replace each config object held by ``config`` (``vision_config``, ``text_config``: a
    class of the same module that builds from defaults) with a fresh one, shrunk and given
    its table keys, recorded as its constructor call: a composite config stays small."""
    try:
        items = dict(vars(config))
    except TypeError:
        return
    home = type(config).__module__
    for name, value in items.items():
        kind = type(value)
        if kind.__module__ != home or not hasattr(value, "__dict__") or required_count(kind):
            continue
        try:
            fresh, kwargs, before = build_small(kind, (), {}, profile)
            give_keys(fresh, module)
            after = dict(vars(fresh))
            expression = call(kind, (), kwargs)
            changed = {k: v for k, v in after.items() if k not in before or before[k] != v}
            if changed:
                expression["__set__"] = {k: encode(v) for k, v in changed.items()}
            setattr(config, name, remember(fresh, expression))
        except Exception:  # a part that does not rebuild keeps its value
            continue
