"""Sandbox child: parameters a constructor uses as a mapping (``**p``, ``p["k"]``, ``p.get``)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from nnrag.validate.probe.signatures import (
    globals_of,
    init_signature,
    is_name,
    parsed_source,
    signature_of,
)
from nnrag.validate.probe.usage import receiving_parameter

__all__ = ["MappingUse", "keyed_instance", "mapping_use"]

_MAPPING_METHODS = frozenset({"get", "items", "keys", "values", "update", "setdefault"})
"""Methods only a mapping has (``copy`` and ``pop`` lists and tensors have too)."""

_MAPPING_TYPES = frozenset({"dict", "Mapping", "MutableMapping"})

_FOLLOW_DEPTH = 3
"""How many hand-overs (``self._make(cfg)``, ``Part(cfg)``) a parameter is followed."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MappingUse:
    """How code uses one parameter as a mapping: ``spread_into``, the block file's classes it
    is spread into as keyword arguments (``Part(**cfg)``: the mapping holds their arguments);
    ``sure``: a use only a mapping serves (spread, string key, ``"k" in``, ``.get``), not
    only a test that it is a ``dict`` (code that takes other values too)."""

    spread_into: tuple[type, ...] = ()
    sure: bool = True
    default: Mapping[str, Any] | None = None
    """The mapping default of the first parameter it is handed to that has one
    (``ConvModule(..., act_cfg=act_cfg)`` with ``act_cfg=dict(type='ReLU')``)."""


def mapping_use(cls: Any, name: str) -> MappingUse | None:
    """How ``__init__`` of ``cls`` (and of its bases) uses parameter ``name`` as a mapping
    (spread with ``**``, indexed by a string, tested with ``"k" in``, its mapping-only
    methods called, handed to a parameter whose default is a mapping; checked against
    ``dict``), through ``self.attr = name`` in any method of the class and hand-overs to
    the block file's functions, classes and methods; ``None`` when it never does."""
    walk = _Walk()
    for klass in _own_classes(cls):
        init = vars(klass).get("__init__")
        if init is not None:
            walk.function(init, name, 0, cls)
    if not (walk.mapped or walk.tested):
        return None
    spread = tuple(dict.fromkeys(walk.spread))
    default = walk.defaults[0] if walk.defaults else None
    return MappingUse(spread_into=spread, sure=walk.mapped, default=default)


def _own_classes(cls: Any) -> list[type]:
    """``cls`` and its bases that are the block file's code (not torch's or builtins')."""
    return [
        klass
        for klass in getattr(cls, "__mro__", ())[:4]
        if klass.__module__.split(".")[0] not in {"torch", "builtins", "typing"}
    ]


def keyed_instance(
    kind: type,
    kwargs: Mapping[str, object],
    reads: set[str],
    field: Callable[[str], object],
    target: Any = None,
) -> tuple[object, dict[str, object]] | None:
    """``kind(**kwargs)`` plus a key for each attribute the code reads from it (``cfg.rpn``),
    by ``field``, where ``kind`` is a mapping class that serves its keys as attributes (a
    config dict class); only keys ``target``, the class it is spread into, takes. The
    instance and the keyword arguments it was called with; ``None`` if ``kind`` does not
    build from them."""
    sig = init_signature(target)[0] if target is not None else None
    takes = sig is None or any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    extra = {
        attr: field(attr)
        for attr in sorted(reads)
        if attr not in kwargs
        and not attr.startswith("_")
        and not hasattr(kind, attr)
        and (takes or (sig is not None and attr in sig.parameters))
    }
    attempts = [{**kwargs, **extra}, dict(kwargs)] if extra else [dict(kwargs)]
    for given in attempts:
        try:
            built = kind(**given)
            served = all(getattr(built, k, None) == v for k, v in extra.items())
        except Exception:
            continue
        if served or given is attempts[-1]:
            return built, given
    return None


class _Walk:
    """Collects the mapping uses of one parameter (see :func:`mapping_use`)."""

    def __init__(self) -> None:
        self.mapped = False
        self.tested = False
        self.spread: list[type] = []
        self.defaults: list[Mapping[str, Any]] = []
        self.seen: set[tuple[int, str]] = set()

    def function(self, func: Any, name: str, depth: int, owner: Any = None) -> None:
        """Uses of parameter ``name`` in ``func`` (a method of class ``owner``: also of the
        ``self`` attributes that hold it, in every method of ``owner``)."""
        func = inspect.unwrap(func)
        if (id(func), name) in self.seen:
            return
        self.seen.add((id(func), name))
        tree = parsed_source(func)
        if tree is None:
            return
        scope = globals_of(func)
        held: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and is_name(node.value, name) and owner is not None:
                held.update(
                    t.attr
                    for t in node.targets
                    if isinstance(t, ast.Attribute) and is_name(t.value, "self")
                )
        self.uses(tree, lambda n: is_name(n, name), scope, depth, owner)
        for attr in sorted(held):
            self.held(attr, depth, owner)

    def held(self, attr: str, depth: int, owner: Any) -> None:
        """Uses of ``self.<attr>`` in every method of the class and its bases."""

        def is_held(node: ast.AST) -> bool:
            return (
                isinstance(node, ast.Attribute)
                and node.attr == attr
                and is_name(node.value, "self")
            )

        for klass in _own_classes(owner):
            tree = parsed_source(klass)
            if tree is not None:
                self.uses(tree, is_held, vars(inspect.getmodule(klass) or object), depth, owner)

    def uses(
        self,
        tree: ast.AST,
        target: Callable[[ast.AST], bool],
        scope: Mapping[str, Any],
        depth: int,
        owner: Any,
    ) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                self.call(node, target, scope, depth, owner)
            elif isinstance(node, ast.Subscript) and target(node.value):
                key = node.slice
                self.mapped |= isinstance(key, ast.Constant) and isinstance(key.value, str)
            elif isinstance(node, ast.Compare) and any(target(c) for c in node.comparators):
                self.mapped |= (
                    isinstance(node.ops[0], (ast.In, ast.NotIn))
                    and isinstance(node.left, ast.Constant)
                    and isinstance(node.left.value, str)
                )

    def call(
        self,
        node: ast.Call,
        target: Callable[[ast.AST], bool],
        scope: Mapping[str, Any],
        depth: int,
        owner: Any,
    ) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and target(func.value):
            self.mapped |= func.attr in _MAPPING_METHODS
            return
        if is_name(func, "isinstance") and len(node.args) == 2 and target(node.args[0]):
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            self.tested |= any(getattr(k, "id", "") in _MAPPING_TYPES for k in kinds)
            return
        called = scope.get(func.id) if isinstance(func, ast.Name) else None
        for keyword in node.keywords:
            if keyword.arg is None and target(keyword.value):  # ``Part(**cfg)``
                self.mapped = True
                if inspect.isclass(called) and _of_block(called, owner):
                    self.spread.append(called)
        if depth >= _FOLLOW_DEPTH:
            return
        handed = next((a for a in node.args if target(a)), None)
        handed = handed or next((k.value for k in node.keywords if k.arg and target(k.value)), None)
        if handed is None:
            return
        if isinstance(func, ast.Attribute) and is_name(func.value, "self") and owner is not None:
            method = inspect.getattr_static(owner, func.attr, None)  # self._make(cfg)
            inner = receiving_parameter(method, node, target, bound=True)
            if inner is not None:
                self.function(method, inner, depth + 1, owner)
        elif _of_block(called, owner):
            inner = receiving_parameter(called, node, target)
            if inner is None:
                return
            sig = init_signature(called)[0] if inspect.isclass(called) else signature_of(called)
            param = sig.parameters.get(inner) if sig is not None else None
            if param is not None and isinstance(param.default, Mapping) and param.default:
                self.defaults.append(param.default)  # what that parameter takes: a mapping
                self.mapped = True
            if inspect.isclass(called):
                for klass in _own_classes(called):
                    init = vars(klass).get("__init__")
                    if init is not None:
                        self.function(init, inner, depth + 1, called)
            else:
                self.function(called, inner, depth + 1)


def _of_block(value: Any, owner: Any) -> bool:
    """A class or function of the module ``owner`` (the class being read) lives in."""
    return (inspect.isclass(value) or inspect.isfunction(value)) and getattr(
        value, "__module__", None
    ) == getattr(owner, "__module__", "")
