"""Sandbox child: what a constructor does with a parameter (reads, builds, access trees)."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nnrag.validate.probe.signatures import (
    globals_of,
    init_signature,
    is_name,
    parsed_source,
    signature_of,
)


def parameter_usage(cls: Any, name: str) -> tuple[set[str], list[str]]:
    """(attributes the code reads from parameter ``name``, the ``build``-like calls it is
    passed to as the config, spelled as called: ``registry_MODELS.build``), from the
    ``__init__`` sources of ``cls`` and its bases, following the parameter into what it is
    handed to: ``Part(config)`` (the class's or function's source
    of the block file), ``self.config = config`` (``self.config.x`` in any method)."""
    usage = _Usage()
    usage.of_class(cls, name, 0)
    return usage.reads - usage.optional, usage.builds


@dataclass(frozen=True, slots=True, kw_only=True)
class Use:
    """How the constructor uses a parameter (:func:`parameter_use`)."""

    reads: frozenset[str]
    """Attributes it reads (``p.expansion``, ``getattr(p, "x")``)."""
    optional: frozenset[str]
    """Attributes it reads only where ``hasattr`` says they are there."""
    methods: frozenset[str]
    """Attributes it calls while the block is built (``p.get_classifier()``)."""
    later: frozenset[str]
    """Attributes the block's other methods call (``self.trunk.set_imgsz(size)``)."""
    called: bool
    """It calls the parameter itself (``p(in_channels, ...)``): a class or a factory."""
    class_checked: bool
    """It passes the parameter to ``issubclass``: a class."""
    instance_checked: bool = False
    """It passes the parameter to ``isinstance``: the code tells kinds of value apart."""


def parameter_use(cls: Any, name: str) -> Use:
    """What the constructor of ``cls`` (and the code it hands parameter ``name`` to, as
    :func:`parameter_usage` follows it) does with the parameter."""
    usage = _Usage()
    usage.of_class(cls, name, 0)
    return Use(
        reads=frozenset(usage.reads - usage.optional),
        optional=frozenset(usage.optional),
        methods=frozenset(usage.methods),
        later=frozenset(usage.later),
        called=usage.called,
        class_checked=usage.class_checked,
        instance_checked=usage.instance_checked,
    )


_FOLLOW_DEPTH = 6
"""How many hand-overs (``Part(config)`` inside ``Block(config)``) a parameter is followed
(a model hands its config down through encoder, layer, attention and its implementation)."""


class _Usage:
    """Collects what code does with one parameter (see :func:`parameter_usage`)."""

    def __init__(self) -> None:
        self.reads: set[str] = set()
        self.optional: set[str] = set()
        """Attributes only read where ``hasattr`` says they are there."""
        self.builds: list[str] = []
        self.methods: set[str] = set()
        self.later: set[str] = set()
        self.called = False
        self.class_checked = False
        self.instance_checked = False
        self.seen: set[tuple[int, str]] = set()

    def of_class(self, cls: Any, name: str, depth: int) -> None:
        for klass in getattr(cls, "__mro__", ())[:4]:
            init = vars(klass).get("__init__")
            if init is None or _foreign(klass):
                continue
            held = self.of_function(init, name, depth, klass)
            if held:
                self.of_attributes(klass, held)

    def of_function(self, func: Any, name: str, depth: int, owner: Any = None) -> set[str]:
        """Walk ``func``'s source for uses of ``name``; return the ``self`` attributes that
        hold it."""
        func = inspect.unwrap(func)  # the code, not a recording wrapper (its globals differ)
        key = (id(func), name)
        if key in self.seen:
            return set()
        self.seen.add(key)
        tree = parsed_source(func)
        if tree is None:
            return set()
        scope = globals_of(func)
        held: set[str] = set()
        for node in ast.walk(tree):
            if is_name(node, name, ast.Attribute):
                assert isinstance(node, ast.Attribute)
                self.reads.add(node.attr)
            elif isinstance(node, ast.Assign) and is_name(node.value, name):
                held.update(
                    t.attr
                    for t in node.targets
                    if isinstance(t, ast.Attribute) and is_name(t.value, "self")
                )
            elif isinstance(node, ast.Call):
                if is_name(node.func, name):
                    self.called = True
                elif is_name(node.func, name, ast.Attribute):
                    assert isinstance(node.func, ast.Attribute)
                    self.methods.add(node.func.attr)
                self.of_call(node, name, depth, scope, owner)
        return held

    def of_call(
        self, node: ast.Call, name: str, depth: int, scope: Mapping[str, Any], owner: Any
    ) -> None:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        passed = [*node.args, *(k.value for k in node.keywords)]
        if not any(is_name(a, name) for a in passed):
            return
        key = node.args[1] if len(node.args) == 2 else None
        text = key.value if isinstance(key, ast.Constant) else None
        if called == "getattr" and isinstance(text, str):  # with a default: absent is fine
            self.reads.add(text)
        elif called == "hasattr" and isinstance(text, str):
            self.optional.add(text)
        elif called == "issubclass" and node.args and is_name(node.args[0], name):
            self.class_checked = True
        elif called == "isinstance" and node.args and is_name(node.args[0], name):
            self.instance_checked = True
        elif (
            "build" in called.lower()
            and _is_config_argument(node, name)
            and _receives_config(node, name, scope, owner)
        ):
            self.builds.append(ast.unparse(func))  # after hand-overs too: the same object
        elif depth < _FOLLOW_DEPTH and isinstance(func, (ast.Name, ast.Subscript)):
            for target in _called(func, scope):
                inner = _receiving_parameter(target, node, name)
                if inner is None:
                    continue
                if isinstance(target, type):
                    self.of_class(target, inner, depth + 1)
                else:
                    self.of_function(target, inner, depth + 1)
        elif depth < _FOLLOW_DEPTH and owner is not None and is_name(func, "self", ast.Attribute):
            assert isinstance(func, ast.Attribute)
            method = inspect.getattr_static(owner, func.attr, None)  # self._make_layer(cfg)
            if inspect.isfunction(method):
                inner = _receiving_parameter(method, node, name, bound=True)
                if inner is not None:
                    self.of_function(method, inner, depth + 1, owner)

    def of_attributes(self, klass: type, held: set[str]) -> None:
        """``self.config.x`` anywhere in the class, for ``self.config = config``."""
        tree = parsed_source(klass)
        if tree is None:
            return
        for init in ast.walk(tree):  # ``self.base.get_classifier()``, while it is built
            if isinstance(init, ast.FunctionDef) and init.name == "__init__":
                self.methods.update(
                    node.func.attr
                    for node in ast.walk(init)
                    if isinstance(node, ast.Call)
                    and _held_read(node.func, held)
                    and isinstance(node.func, ast.Attribute)
                )
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _held_read(node.func, held):
                assert isinstance(node.func, ast.Attribute)
                self.later.add(node.func.attr)
            if _held_read(node, held):
                assert isinstance(node, ast.Attribute)
                self.reads.add(node.attr)
            if (  # ``hasattr(self.config, "x") and self.config.x``: optional
                isinstance(node, ast.Call)
                and is_name(node.func, "hasattr")
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Attribute)
                and node.args[0].attr in held
                and is_name(node.args[0].value, "self")
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                self.optional.add(node.args[1].value)


def _held_read(node: ast.AST, held: set[str]) -> bool:
    """``self.held.x`` for an attribute ``held`` of ``self`` that holds the parameter."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr in held
        and is_name(node.value.value, "self")
    )


def _called(func: ast.expr, scope: Mapping[str, Any]) -> list[Any]:
    """What a call can call: the object ``f`` names, or every value of a module-level
    table for ``TABLE[key](...)`` (``CLASSES[config.impl](config)``)."""
    if isinstance(func, ast.Name):
        return [scope.get(func.id)]
    table = (
        scope.get(func.value.id)
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name)
        else None
    )
    return list(table.values()) if isinstance(table, Mapping) else []


def _foreign(klass: type) -> bool:
    return klass.__module__.split(".")[0] in {"torch", "builtins"}


def _receiving_parameter(
    target: Any, node: ast.Call, name: str, *, bound: bool = False
) -> str | None:
    """The parameter of the block file's class or function ``target`` that receives ``name``
    in the call ``node`` (by position or keyword; ``bound``: a method called on ``self``),
    or ``None``."""
    if _foreign_object(target):
        return None
    return receiving_parameter(target, node, lambda a: is_name(a, name), bound=bound)


def receiving_parameter(
    target: Any, node: ast.Call, handed: Callable[[ast.AST], bool], *, bound: bool = False
) -> str | None:
    """The parameter of class or function ``target`` that receives the argument ``handed``
    picks in the call ``node`` (by keyword, else by position; ``bound``: a method called on
    ``self``), or ``None``."""
    if not (inspect.isclass(target) or inspect.isfunction(target)):
        return None
    for keyword in node.keywords:
        if keyword.arg is not None and handed(keyword.value):
            return keyword.arg
    position = next((i for i, a in enumerate(node.args) if handed(a)), None)
    sig = init_signature(target)[0] if inspect.isclass(target) else signature_of(target)
    if sig is None or position is None:
        return None
    params = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    position += bound
    return params[position].name if position < len(params) else None


def _foreign_object(target: Any) -> bool:
    return str(getattr(target, "__module__", "")).split(".")[0] in {"torch", "builtins", "typing"}


def _receives_config(node: ast.Call, name: str, scope: Mapping[str, Any], owner: Any) -> bool:
    """Whether the ``build``-like call ``node`` takes ``name`` as a config: its callee is
    not the block file's own function or method (a registry's ``build``), or the parameter
    of the callee that receives it is named as one (``cfg``, ``config``); not
    ``self.build_project(channels, ...)``, a helper that takes a size."""
    func = node.func
    bound = owner is not None and is_name(func, "self", ast.Attribute)
    if bound:
        assert isinstance(func, ast.Attribute)
        method = inspect.getattr_static(owner, func.attr, None)
        targets = [method] if inspect.isfunction(method) else []
    else:
        targets = _called(func, scope) if isinstance(func, (ast.Name, ast.Subscript)) else []
    receiving = [
        found
        for target in targets
        if (found := _receiving_parameter(target, node, name, bound=bound)) is not None
    ]
    return not receiving or any(
        "cfg" in parameter.lower() or "config" in parameter.lower() for parameter in receiving
    )


def _is_config_argument(node: ast.Call, name: str) -> bool:
    """``build(param, ...)`` or ``build(cfg=param)``: the parameter is what is built (not a
    size passed beside the config, as in ``build_conv(cfg, in_channels, ...)``)."""
    first = node.args[0] if node.args else None
    if isinstance(first, ast.Name) and first.id == name:
        return True
    return any(
        k.arg is not None
        and "cfg" in k.arg
        and isinstance(k.value, ast.Name)
        and k.value.id == name
        for k in node.keywords
    )


Access = dict[tuple[str, str], "Access"]
"""What code reads under a parameter: ``("attr", "MODEL")``, ``("key", "stage1")`` or
``("item", "")`` (an index) to what it reads under that."""


def access_tree(cls: Any, name: str, *, held: bool = False) -> Access:
    """The attribute, string-key and index chains ``__init__`` (of ``cls`` and its bases)
    reads from parameter ``name``, merged into a tree, through local aliases
    (``stage = extra["stage1"]`` then ``stage["num_channels"][i]``); ``held``: also through
    the attributes of ``self`` that hold it (``self.trunk = trunk`` then
    ``self.trunk.channel_list[-1]``)."""
    tree: Access = {}
    for klass in getattr(cls, "__mro__", ())[:4]:
        init = vars(klass).get("__init__")
        if init is None or _foreign(klass):
            continue
        found = parsed_source(inspect.unwrap(init))
        if found is None:
            continue
        roots: dict[str, list[tuple[str, str]]] = {name: []}
        for _ in range(3):  # aliases of aliases
            for node in ast.walk(found):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, chain = node.targets[0], _chain(node.value, roots)
                    if isinstance(target, ast.Name) and chain and target.id not in roots:
                        roots[target.id] = chain
                    elif (
                        held
                        and is_name(node.value, name)
                        and is_name(target, "self", ast.Attribute)
                    ):
                        assert isinstance(target, ast.Attribute)
                        roots[f"self.{target.attr}"] = []
        for node in ast.walk(found):
            chain = _chain(node, roots) if isinstance(node, (ast.Attribute, ast.Subscript)) else []
            level = tree
            for step in chain:
                level = level.setdefault(step, {})
    return tree


def _chain(node: ast.AST, roots: Mapping[str, list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """The steps from a root parameter (or an alias of one) to ``node``; empty if none."""
    steps: list[tuple[str, str]] = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            steps.append(("attr", node.attr))
        elif isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            steps.append(("key", node.slice.value))
        elif isinstance(node.slice, ast.Slice):
            return []
        else:
            steps.append(("item", ""))
        node = node.value
        if is_name(node, "self", ast.Attribute) and f"self.{getattr(node, 'attr', '')}" in roots:
            break  # ``self.trunk``, held
    root = node.id if isinstance(node, ast.Name) else f"self.{getattr(node, 'attr', '')}"
    if root not in roots or not isinstance(node, (ast.Name, ast.Attribute)):
        return []
    return [*roots[root], *reversed(steps)] if steps else list(roots[root])


def is_nested(tree: Access) -> bool:
    """A structure worth building from its reads: string keys or indexes anywhere, or
    attributes of attributes (``cfg.MODEL.WIDTH``); not one level of attributes."""
    return any(kind != "attr" or bool(sub) for (kind, _), sub in tree.items())
