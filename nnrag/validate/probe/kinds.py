"""Sandbox child: which classes a registry config dict may name for a parameter that the
constructor hands to a registry ``build`` call, best first: the registry the call names, a
default the block file gives a parameter of the same name, then the registered classes of
the parameter's kind (its name's words in the class's or its bases' names), smallest first."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

from torch import nn

from nnrag.validate.probe.registries import Carried
from nnrag.validate.probe.signatures import is_abstract_module, required_count, signature_of
from nnrag.validate.probe.usage import parameter_usage

_GENERIC = frozenset(
    {"build", "builder", "cfg", "cfgs", "config", "configs", "from", "registry", "type", "base"}
)
"""Words that name no kind: the build call's, the config's, a base class's prefix."""


def words(text: str) -> list[str]:
    """The lower-case words of a name (snake_case, dotted or CamelCase) of three letters or
    more, without the generic ones: ``registry_TASK_UTILS.build`` -> ``task, utils``,
    ``BaseDataPreprocessor`` -> ``data, preprocessor``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if len(w) > 2 and w not in _GENERIC]


def same_word(a: str, b: str) -> bool:
    """One word up to a plural ``s`` or a shortening (``act`` of ``activation``)."""
    return a.rstrip("s") == b.rstrip("s") or a.startswith(b) or b.startswith(a)


def _matches(wanted: list[str], have: list[str]) -> int:
    """How many of ``wanted`` some word of ``have`` is."""
    return sum(any(same_word(w, h) for h in have) for w in wanted)


def named_tables(name: str, builds: list[str]) -> list[Mapping[str, Any]]:
    """The carried registries the build call names (``TASK_UTILS.build``: the ``task util``
    registry), else those named like the parameter, else all of them. A named registry that
    is empty stays the answer: a ``tokenizer`` built from it is no class of another one."""
    return [table for _, table in _named(name, builds)]


def _named(name: str, builds: list[str]) -> list[tuple[str, Mapping[str, Any]]]:
    """:func:`named_tables` with the registries' names."""
    for texts in (builds, [name]):
        wanted = [w for text in texts for w in words(text)]
        found: list[tuple[str, Mapping[str, Any]]] = [
            (n, t) for n, t in sorted(Carried.tables.items()) if _matches(wanted, words(n))
        ]
        if found:
            return found
    everything: list[tuple[str, Mapping[str, Any]]] = sorted(Carried.tables.items())
    return everything


def empty_registries(cls: Any) -> list[str]:
    """``param (the 'x' registry)`` for each required constructor parameter of ``cls``
    handed to a registry ``build`` whose named registries hold no class in the block file
    (their classes are registered by code the closure does not carry): no config the probe
    can write names one, and the block cannot be built without one."""
    sig = signature_of(getattr(cls, "__init__", None))
    found = []
    for name, param in sig.parameters.items() if sig else ():
        if param.default is not param.empty or param.kind in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            continue
        builds = parameter_usage(cls, name)[1]
        named = _named(name, builds) if builds else []
        if named and not any(table for _, table in named):
            registries = " and ".join(repr(n) for n, _ in named)
            found.append(f"{name} (the {registries} registry)")
    return found


def kind_score(name: str, cls: type) -> int:
    """How many words of the parameter's name the class's name or its bases' names have
    (``bbox_head``: a ``*Head``; ``data_preprocessor``: a ``BaseDataPreprocessor``)."""
    names = [k.__name__ for k in getattr(cls, "__mro__", (cls,)) if k not in (object, nn.Module)]
    return _matches(words(name), [w for n in names for w in words(n)])


def default_dicts(module: Any, name: str, tables: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The config dicts the block file's classes and functions give a parameter named
    ``name`` as its default (``act_cfg=dict(type='GELU')``) whose type one of ``tables``
    registers, most often given first."""
    counts: dict[str, tuple[int, dict[str, Any]]] = {}
    for value in list(vars(module).values()) if module is not None else ():
        func = vars(value).get("__init__") if isinstance(value, type) else value
        if not (inspect.isfunction(func) and getattr(value, "__module__", "") == module.__name__):
            continue
        sig = signature_of(func)
        param = sig.parameters.get(name) if sig else None
        default = getattr(param, "default", None)
        if not isinstance(default, Mapping):
            continue
        kind = default.get(Carried.key)
        if isinstance(kind, str) and any(kind in t for t in tables):
            key = repr(sorted(default.items(), key=repr))
            seen, _ = counts.get(key, (0, {}))
            counts[key] = (seen + 1, dict(default))
    return [d for _, d in sorted(counts.values(), key=lambda c: -c[0])]


def ranked_classes(
    name: str, tables: list[Mapping[str, Any]], owner: Any = None
) -> list[tuple[str, type]]:
    """``(type string, class)`` of ``tables`` that can run, of the parameter's kind first
    (:func:`kind_score`), then by fewest required constructor parameters, then by key.
    Not the class being built (``owner``) nor a class that takes a parameter of the same
    name (a detector is not its own ``det_head``: it would build itself again); a base of
    ``owner`` may be (a preprocessor that wraps another preprocessor)."""
    seen: dict[str, type] = {}
    for table in tables:
        for key, value in sorted(table.items()):
            if _candidate(value, name, owner):
                seen.setdefault(key, value)
    return sorted(
        seen.items(),
        key=lambda item: (-kind_score(name, item[1]), required_count(item[1]), item[0]),
    )


def _candidate(value: object, name: str, owner: Any) -> bool:
    if not isinstance(value, type):
        return False
    if issubclass(value, nn.Module) and is_abstract_module(value):
        return False
    if value is owner:
        return False
    sig = signature_of(value)
    return sig is None or name not in sig.parameters


def of_another_kind(name: str, option: type, owner: Any) -> bool:
    """``option`` has none of parameter ``name``'s words but those of another parameter of
    ``owner``'s constructor (a ``BaseDataPreprocessor`` for ``backbone`` beside
    ``data_preprocessor``): the class that parameter wants, not this one's."""
    if not words(name) or kind_score(name, option):
        return False
    sig = signature_of(owner) if owner is not None else None
    others = [p for p in (sig.parameters if sig else ()) if p != name]
    return any(kind_score(other, option) for other in others)
