"""Sandbox child: what kind of value a parameter's annotation asks for."""

from __future__ import annotations

import dataclasses
import enum
import numbers
import typing
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

_SCALARS = (int, float, str, bool)


def preferred_member(options: list[Any]) -> Any:
    """The union member to synthesize: an Enum or Literal member beats ``str`` and the rest; a
    scalar beats a sequence (``Sequence[int] | int``: one int broadcasts to any length, and a
    bare ``tuple | str`` gives no item types to fill the tuple with); a class with nothing
    to configure only where there is nothing else (``Union[ConfigDict, dict]`` with an
    empty ``ConfigDict``: the ``dict``)."""
    options = [o for o in options if not nothing_to_configure(o)] or options
    for option in options:
        if typing.get_origin(option) is typing.Literal or (
            isinstance(option, type) and issubclass(option, enum.Enum)
        ):
            return option
    if all(o in _SCALARS or is_sequence_type(o) for o in options):
        return next((o for o in options if o in _SCALARS), options[0])
    return options[0]


def is_duck_union(options: list[Any]) -> bool:
    """A union with a structural member (a ``typing.Protocol``, bare or subscripted, as in
    ``numpy.typing.ArrayLike``): the author accepts whatever has the right methods, and no
    member says which value fits the code."""
    return any(
        getattr(typing.get_origin(option) or option, "_is_protocol", False) for option in options
    )


_EMPTY_CLASS = frozenset(
    {"__module__", "__doc__", "__dict__", "__weakref__", "__qualname__", "__firstlineno__"}
    | {"__static_attributes__"}
)


def nothing_to_configure(option: Any) -> bool:
    """A class with nothing to configure: no constructor parameters, no dataclass or attrs
    fields, no class-level attribute (method or data) of its own or of a base but
    ``object``. A stand-in the code only tests ``isinstance`` against is exactly that: an
    instance of it serves no code as a config, so it is never a value candidate."""
    if not isinstance(option, type) or option is object:
        return False
    if dataclasses.is_dataclass(option) or hasattr(option, "__attrs_attrs__"):
        return False
    return all(
        klass.__module__ != "builtins" and not set(vars(klass)) - _EMPTY_CLASS
        for klass in option.__mro__[:-1]
    )


def is_sequence_type(annotation: Any) -> bool:
    """``tuple``, ``list``, ``Sequence[int]``, ``Tuple[int, int]`` and the like."""
    origin = typing.get_origin(annotation) or annotation
    return origin in (tuple, list) or getattr(origin, "__name__", "") in {"Sequence", "Iterable"}


def is_config_type(annotation: Any) -> bool:
    """A class :meth:`Synth.value` builds as a config (not data, a tensor or a module)."""
    return (
        isinstance(annotation, type)
        and annotation.__module__ != "builtins"
        and not issubclass(
            annotation, (enum.Enum, nn.Module, torch.Tensor, numbers.Number, Mapping)
        )
        and annotation not in (torch.dtype, torch.device)
    )


def is_mapping_type(annotation: Any) -> bool:
    """``dict``, ``Mapping[...]``, a ``dict`` subclass (a config dict class), or a union
    that accepts one of those (``Union[ConfigDict, dict]``): what a registry ``build`` takes."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        return any(is_mapping_type(a) for a in typing.get_args(annotation))
    target = origin if origin is not None else annotation
    return isinstance(target, type) and issubclass(target, Mapping)


def admits(annotation: Any, value: object) -> bool:
    """Whether a union annotation names ``value``'s own kind beside what else it takes
    (``Union[int, Dict[str, int]]`` admits ``16``): the code handles both, by an
    ``isinstance`` test."""
    origin = typing.get_origin(annotation)
    if not (origin is typing.Union or type(annotation).__name__ == "UnionType"):
        return False
    return any(
        isinstance(member, type) and not issubclass(member, Mapping) and isinstance(value, member)
        for member in typing.get_args(annotation)
    )


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
