"""Sandbox child: per-sample data objects for forward arguments it reads by attribute (a
list of records whose fields, meta facts and nested records forward reads), grown one field
at a time from the ``AttributeError`` forward raised."""

from __future__ import annotations

import collections.abc
import inspect
import re
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from nnrag.validate.probe.annotations import nothing_to_configure
from nnrag.validate.probe.kinds import kind_score
from nnrag.validate.probe.signatures import globals_of, signature_of
from nnrag.validate.probe.structured import dict_keys
from nnrag.validate.probe.values import ref, tensor_spec

_NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
_KEY_ERROR = re.compile(r"^KeyError: '(\w+)'$")
ROWS = 3
"""Instances (boxes, labels, masks) in each per-sample record: one length for all its fields."""
_BOXES = [[0.0, 0.0, 8.0, 8.0], [4.0, 4.0, 16.0, 12.0], [2.0, 6.0, 10.0, 20.0]]
"""Valid ``(x1, y1, x2, y2)`` boxes, one per row, inside the smallest image side the probe uses."""
ALTERNATIVES = 3
"""Data classes tried for an unannotated argument (each costs attempts)."""


def sample_inputs(
    message: str,
    block: nn.Module,
    params: list[inspect.Parameter],
    args: list[Any],
    kwargs: dict[str, Any],
) -> list[tuple[list[Any], dict[str, Any]]]:
    """The inputs again with what forward read by attribute given, when the error says it
    read an attribute tensors do not have, best first:

    - from an argument given as a tensor (or ``None``, or a list of tensors): that argument
      becomes records of the block file's own data class, one per sample of the first
      input's batch (a list where the annotation or a plural name says so) — the class the
      annotation names (``List[Sample]``), else each most derived class of the file that
      has the attribute (one alternative each, in the file's order); a class constructible
      without arguments, never a module or a tensor;
    - from such a record: the field, on every record of that class (a property with a
      setter typed with a data class gets an empty one; ``*shape``/``*size`` fields the first
      input's sizes, boxes valid boxes, labels indices, masks a mask per row, scores a score
      per row; facts that are not tensors go in the constructor's mapping argument when it
      has one, ``metainfo=``);
    - ``KeyError: 'k'`` while records carry such a mapping: ``k`` added to it by name.

    Empty: the error is of another kind, or nothing fits.
    """
    first = _first_tensor(args)
    if first is None:
        return []
    sizes = _image_sizes(first["shape"])
    scope = globals_of(block.forward)
    found: tuple[list[Any], dict[str, Any]] | None = None
    if m := _KEY_ERROR.match(message.strip()):
        found = _with_meta_key(args, kwargs, m.group(1), sizes)
    elif (m := _NO_ATTRIBUTE.search(message)) is None:
        return []
    elif m.group(1) in ("Tensor", "NoneType", "list"):
        if hasattr(torch.Tensor, m.group(2)):
            return []
        if m.group(1) == "list" and (one := _unlisted(params, args, kwargs)) is not None:
            return [one]
        facts = _facts_read(block, sizes)
        batch = int(first["shape"][0])
        return _as_records(params, args, kwargs, m.group(2), scope, batch=batch, facts=facts)
    else:
        found = _with_field(args, kwargs, m.group(1), m.group(2), scope=scope, sizes=sizes)
    return [] if found is None else [found]


# --------------------------------------------------------------------------- records


def _as_records(
    params: list[inspect.Parameter],
    args: list[Any],
    kwargs: dict[str, Any],
    attr: str,
    scope: Mapping[str, Any],
    *,
    batch: int,
    facts: dict[str, Any],
) -> list[tuple[list[Any], dict[str, Any]]]:
    """The first argument after the first input given as a tensor, ``None`` or tensors
    that a data class fits, as records of each class that fits it; else the first such
    entry of a dict input (``data["data_samples"]``)."""
    positional = [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    for i, p in enumerate(positional):
        given = p.name in kwargs
        value = kwargs.get(p.name) if given else args[i] if i < len(args) else None
        if (i == 0 and not given) or not _replaceable(value):
            continue
        if not given and i >= len(args) and p.default is p.empty:
            continue
        named = _annotated_classes(p.annotation, scope)
        classes = [c for c in named if _record_class(c)][:1] or (
            [] if named else _classes_with(attr, scope, p.name)
        )
        many = (
            isinstance(value, list)
            or _is_sequence(p.annotation, scope)
            or (not named and p.name.endswith("s"))
        )
        found = []
        for cls in classes:
            new = _records_for(cls, args, kwargs, batch if many else 0, facts)
            if given or i >= len(args):
                found.append((list(args), {**kwargs, p.name: new}))
            else:
                found.append(([*args[:i], new, *args[i + 1 :]], dict(kwargs)))
        if found:
            return found
    return _as_keyed_records(args, kwargs, attr, scope, batch=batch, facts=facts)


def _as_keyed_records(
    args: list[Any],
    kwargs: dict[str, Any],
    attr: str,
    scope: Mapping[str, Any],
    *,
    batch: int,
    facts: dict[str, Any],
) -> list[tuple[list[Any], dict[str, Any]]]:
    """The first entry of a dict input given as a tensor, ``None`` or tensors, not the dict's
    first one, as records of each data class of the file that has ``attr``."""
    for i, value in enumerate(args):
        entries = value.get("__dict__") if isinstance(value, dict) else None
        if not isinstance(entries, dict):
            continue
        for key, entry in list(entries.items())[1:]:
            if not _replaceable(entry):
                continue
            many = isinstance(entry, list) or key.endswith("s")
            found = []
            for cls in _classes_with(attr, scope, key):
                new = _records_for(cls, args, kwargs, batch if many else 0, facts)
                keyed = {"__dict__": {**entries, key: new}}
                found.append(([*args[:i], keyed, *args[i + 1 :]], dict(kwargs)))
            if found:
                return found
    return []


def _records_for(
    cls: type, args: list[Any], kwargs: dict[str, Any], count: int, facts: dict[str, Any]
) -> Any:
    """``count`` records of ``cls`` in a list (one per sample of the batch), or one record
    when ``count`` is 0; ``facts`` in the constructor's mapping argument, when it has one."""
    record = _record(cls, args, kwargs)
    meta = _meta_parameter(cls)
    if meta is not None and facts:
        held = record.setdefault("kwargs", {}).setdefault(meta, {"__dict__": {}})["__dict__"]
        held.update({k: _copy(v) for k, v in facts.items() if k not in held})
    return [_copy(record) for _ in range(count)] if count else record


def _unlisted(
    params: list[inspect.Parameter], args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]] | None:
    """The first argument given as a list of records, as its first record: forward read a
    field of the list itself (the probe took a plural name for a list)."""
    names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    for i, value in enumerate(args):
        if isinstance(value, list) and value and all(_is_record(v) for v in value):
            return [*args[:i], value[0], *args[i + 1 :]], dict(kwargs)
    for name in names:
        value = kwargs.get(name)
        if isinstance(value, list) and value and all(_is_record(v) for v in value):
            return list(args), {**kwargs, name: value[0]}
    return None


def _is_record(value: Any) -> bool:
    return isinstance(value, dict) and "__call__" in value


def _replaceable(value: Any) -> bool:
    return (
        value is None
        or _is_tensor_spec(value)
        or (isinstance(value, list) and bool(value) and all(_is_tensor_spec(v) for v in value))
    )


def _annotated_classes(annotation: Any, scope: Mapping[str, Any]) -> list[type]:
    """The plain classes an annotation names (``List[Sample]``, ``Optional[SampleList]``;
    the names of a string annotation looked up in the block file's scope)."""
    found: list[type] = []
    stack = _annotation_items(annotation, scope)
    while stack:
        item = stack.pop(0)
        if isinstance(item, type) and not typing.get_args(item):
            found.append(item)
        stack.extend(typing.get_args(item))
    return found


def _is_sequence(annotation: Any, scope: Mapping[str, Any]) -> bool:
    """Whether an annotation asks for a list or tuple (``List[Sample]``, a ``SampleList``
    alias of one, ``Optional[...]`` of either)."""
    if isinstance(annotation, str) and re.search(
        r"\b(List|list|Sequence|Tuple|tuple|Iterable)\[", annotation
    ):
        return True
    stack = _annotation_items(annotation, scope)
    while stack:
        item = stack.pop(0)
        if typing.get_origin(item) in _SEQUENCES or item in _SEQUENCES:
            return True
        if typing.get_origin(item) is typing.Union:
            stack.extend(a for a in typing.get_args(item) if a is not type(None))
    return False


_SEQUENCES = (list, tuple, collections.abc.Sequence, collections.abc.Iterable)
"""What a ``List[...]``, ``Tuple[...]``, ``Sequence[...]`` or ``Iterable[...]`` annotation is of."""


def _annotation_items(annotation: Any, scope: Mapping[str, Any]) -> list[Any]:
    """The annotation itself, or for a string one the objects its names are in ``scope``."""
    if annotation is inspect.Parameter.empty:
        return []
    if not isinstance(annotation, str):
        return [annotation]
    names = re.findall(r"[A-Za-z_]\w*", annotation)
    return [scope[n] for n in names if n in scope]


def _record_class(cls: type) -> bool:
    """A plain data class: not a module, tensor, exception or builtin, constructible
    without arguments, and not an empty stand-in the block file only tests against (its
    records would carry none of the methods forward calls)."""
    if (
        nothing_to_configure(cls)
        or issubclass(cls, (nn.Module, torch.Tensor, BaseException))
        or cls.__module__ == "builtins"
        or cls.__module__.startswith(("torch", "typing", "numpy"))
    ):
        return False
    sig = signature_of(cls)
    return sig is not None and all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in sig.parameters.values()
    )


def _classes_with(attr: str, scope: Mapping[str, Any], name: str) -> list[type]:
    """The most derived data classes of the block file that have ``attr`` (a method,
    property or class attribute), else those named like the argument (a field set on
    each record, ``data_samples``: a ``*DataSample``); those named like the argument first,
    then in the file's order; at most :data:`ALTERNATIVES`."""
    module = scope.get("__name__")
    plain = [
        v
        for v in dict(scope).values()
        if isinstance(v, type) and v.__module__ == module and _record_class(v)
    ]
    found = [c for c in plain if inspect.getattr_static(c, attr, None) is not None]
    found = found or [c for c in plain if kind_score(name, c)]
    leaves = [c for c in found if not any(o is not c and issubclass(o, c) for o in found)]
    leaves.sort(key=lambda c: -kind_score(name, c))
    return leaves[:ALTERNATIVES]


def _record(cls: type, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A spec that builds ``cls`` with no arguments, with the fields records of the same
    class already carry."""
    spec: dict[str, Any] = {"__call__": ref(cls), "args": []}
    for other in _records(args, kwargs):
        if other["__call__"] == spec["__call__"]:
            for key in ("kwargs", "__set__"):
                if other.get(key):
                    spec[key] = _copy(other[key])
            break
    return spec


def _records(*values: Any) -> Iterator[dict[str, Any]]:
    """Every record spec (a ``__call__`` expression) in ``values``, nested ones too."""
    for value in values:
        if isinstance(value, list):
            yield from _records(*value)
        elif isinstance(value, dict):
            if "__call__" in value:
                yield value
            yield from _records(*value.values())


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- fields


def _with_field(
    args: list[Any],
    kwargs: dict[str, Any],
    owner: str,
    attr: str,
    *,
    scope: Mapping[str, Any],
    sizes: list[int],
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs again with field ``attr`` on every record of class ``owner``."""
    new_args, new_kwargs = _copy(args), _copy(kwargs)
    targets = [r for r in _records(new_args, new_kwargs) if _qualname(r).split(".")[-1] == owner]
    if not targets:
        return None
    cls = _resolve(targets[0], scope)
    if cls is None:
        return None
    setter = _setter_class(cls, attr) or _setter_class(cls, attr.lstrip("_"))
    meta = _meta_parameter(cls)
    if setter is not None:
        name = attr if _setter_class(cls, attr) else attr.lstrip("_")
        place, value = "__set__", _record(setter, new_args, new_kwargs)
    else:
        name, value = attr, field_value(attr, sizes)
        if value is None:
            return None
        place = "__set__" if _is_tensor_spec(value) or meta is None else "kwargs"
    for record in targets:
        if place == "__set__":
            record.setdefault("__set__", {})[name] = _copy(value)
        else:
            mapping = record.setdefault("kwargs", {}).setdefault(str(meta), {"__dict__": {}})
            mapping["__dict__"][name] = _copy(value)
    return new_args, new_kwargs


def _with_meta_key(
    args: list[Any], kwargs: dict[str, Any], key: str, sizes: list[int]
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs again with ``key`` in the meta mapping of every record that has one."""
    value = field_value(key, sizes)
    if value is None or _is_tensor_spec(value):
        return None
    new_args, new_kwargs = _copy(args), _copy(kwargs)
    changed = False
    for record in _records(new_args, new_kwargs):
        for mapping in (record.get("kwargs") or {}).values():
            held = mapping.get("__dict__") if isinstance(mapping, dict) else None
            if isinstance(held, dict) and key not in held:
                held[key] = _copy(value)
                changed = True
    return (new_args, new_kwargs) if changed else None


def _qualname(record: Mapping[str, Any]) -> str:
    target = record.get("__call__")
    text = target.get("__ref__", "") if isinstance(target, dict) else ""
    return str(text).partition(":")[2]


def _resolve(record: Mapping[str, Any], scope: Mapping[str, Any]) -> type | None:
    value: Any = scope
    for part in _qualname(record).split("."):
        value = value.get(part) if isinstance(value, Mapping) else getattr(value, part, None)
    return value if isinstance(value, type) else None


def _setter_class(cls: type, attr: str) -> type | None:
    """The data class a property's setter takes (``@x.setter def x(self, value: Rows)``)."""
    prop = inspect.getattr_static(cls, attr, None)
    if not isinstance(prop, property) or prop.fset is None:
        return None
    sig = signature_of(prop.fset)
    params = list(sig.parameters.values()) if sig else []
    if len(params) < 2:
        return None
    scope = globals_of(prop.fset)
    named = _annotated_classes(params[1].annotation, scope)
    return next((c for c in named if _record_class(c)), None)


def _meta_parameter(cls: type) -> str | None:
    """The constructor's keyword parameter that takes a mapping of facts (``metainfo: dict
    = None``), if any."""
    sig = signature_of(cls)
    for p in sig.parameters.values() if sig else ():
        text = p.annotation if isinstance(p.annotation, str) else repr(p.annotation)
        if (
            p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is None
            and re.search(r"\b(dict|Dict|Mapping)\b", text)
        ):
            return p.name
    return None


def _image_sizes(shape: list[int]) -> list[int]:
    """``(H, W)`` of the first input: its last two sizes for an image, else a square."""
    return [int(shape[-2]), int(shape[-1])] if len(shape) >= 4 else [32, 32]


_FIELDS: list[tuple[str, Callable[[list[int]], Any]]] = [
    (r"shape|size", lambda hw: {"__tuple__": list(hw)}),
    (r"scale|factor", lambda hw: {"__tuple__": [1.0, 1.0]}),
    (r"flip", lambda hw: False),
    (r"ratio", lambda hw: 1.0),
    (r"box", lambda hw: {"shape": [ROWS, 4], "dtype": "float32", "data": _BOXES}),
    (r"label", lambda hw: tensor_spec([ROWS], "int64", 2)),
    (r"mask", lambda hw: tensor_spec([ROWS, *hw], "bool")),
    (r"score", lambda hw: tensor_spec([ROWS], "float32")),
]
"""What a record field holds, by its name (first match)."""


def field_value(name: str, sizes: list[int]) -> Any:
    """The value of a record field by its name (``None``: the name says nothing)."""
    low = name.lower()
    for pattern, make in _FIELDS:
        if re.search(pattern, low):
            return make(sizes)
    return None


def _facts_read(block: nn.Module, sizes: list[int]) -> dict[str, Any]:
    """The facts (not tensors) forward reads by string key (``sample.get("valid_ratio")``)
    whose names say what they hold: records carry them from the start."""
    found: dict[str, Any] = {}
    for keys in dict_keys(block.forward).values():
        for key in keys:
            value = field_value(key, sizes)
            if value is not None and not _is_tensor_spec(value):
                found[key] = value
    return found


def _first_tensor(values: list[Any]) -> dict[str, Any] | None:
    """The first tensor spec of the inputs, in a list, tuple or dict of them too."""
    for value in values:
        if _is_tensor_spec(value):
            return dict(value)
        items: Any = value
        if isinstance(value, dict):
            items = value.get("__tuple__") or list((value.get("__dict__") or {}).values())
        if isinstance(items, list) and (found := _first_tensor(items)) is not None:
            return found
    return None


def _is_tensor_spec(value: Any) -> bool:
    return isinstance(value, dict) and "shape" in value and "dtype" in value
