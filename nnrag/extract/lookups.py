"""Which methods a class body lets a closure leave out: ``ast`` predicates on one class.

A method is prunable when nothing outside the closure can call it by name
(:func:`prunable`); a class that looks itself up by a computed name keeps every method
(:func:`looks_itself_up`); a decorator that only wraps its function does not keep a method
(:func:`only_wraps`); :func:`read_chains` lists the dotted names a class body reads. Used by
:mod:`nnrag.extract.methods`.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from nnrag.extract.heldnames import (
    assignments,
    held_name,
    instance_key,
    only_tested,
    parameters,
)
from nnrag.extract.syntax import nodes, push_children
from nnrag.pyscope.scopes import dotted as _dotted

__all__ = [
    "Spelled",
    "keeps_argument",
    "looks_itself_up",
    "only_wraps",
    "prunable",
    "read_chains",
    "self_lookups",
    "spelled",
]

LookupReach: TypeAlias = Literal["whole", "properties"] | None
"""What a class's lookups of itself by computed names reach (:func:`self_lookups`)."""

_PLAIN_DECORATORS = frozenset(
    {"property", "staticmethod", "classmethod", "cached_property", "overload"}
)
_ACCESSORS = frozenset({"setter", "getter", "deleter"})
_SELF = frozenset({"self", "cls"})
_ENUMERATE = frozenset({"dir", "vars", "getmembers", "getattr", "hasattr", "setattr"})
_LOOKUP_HOOKS = frozenset({"__getattribute__", "__getattr__", "__setattr__", "__delattr__"})
"""Methods Python calls with an attribute name the caller spelled (``obj.name``)."""
_READ_HOOKS = frozenset({"__getattribute__", "__getattr__"})
"""The hooks that read an attribute (and so may call a method) when called directly."""
_STORES = frozenset({"append", "add", "insert", "extend", "setdefault", "update", "setattr"})
"""Calls that put an argument into a container or an object that outlives the call."""
_METADATA = frozenset(
    {"__doc__", "__name__", "__qualname__", "__signature__", "__wrapped__", "__module__"}
)
"""Attributes of a function Python itself keeps (help, wraps): setting them keeps it nowhere."""


def prunable(
    stmt: ast.stmt,
    torch: frozenset[str] | None = None,
    registering: frozenset[str] | None = None,
) -> bool:
    """A method only code that spells its name can call (``torch``: the names torch can call
    a method of this module class by, ``None`` for a plain class; ``registering``: the
    methods whose decorators may keep them somewhere, when the caller looked the decorators
    up, ``None`` to judge them here by name)."""
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    name = stmt.name
    if name.startswith("_") and name.endswith("_"):
        return False  # __dunder__ and _sunder_: called by Python and the standard library
    if any((_dotted(d) or "").rsplit(".", 1)[-1] == "abstractmethod" for d in stmt.decorator_list):
        return False  # left out, it would let an incomplete subclass be built
    if torch is not None:
        return name not in torch  # torch's names and methods with registering decorators
    if registering is not None:
        return name not in registering

    for decorator in stmt.decorator_list:
        if isinstance(decorator, ast.Name) and decorator.id in _PLAIN_DECORATORS:
            continue
        if isinstance(decorator, ast.Attribute) and (
            decorator.attr in _ACCESSORS or decorator.attr in _PLAIN_DECORATORS
        ):
            continue
        return False  # a decorator may register the method somewhere
    return True


def looks_itself_up(node: ast.ClassDef, *, module: bool = False) -> bool:
    """Whether any method of ``node`` may be called by a computed name (:func:`self_lookups`
    is ``"whole"``)."""
    return self_lookups(node, module=module) == "whole"


def self_lookups(node: ast.ClassDef, *, module: bool = False) -> LookupReach:
    """What ``node``'s lookups of itself by a computed name can reach.

    ``"whole"``: any method may be called: ``getattr(self, name)`` with a computed name whose
    value escapes, ``dir(self)``, ``vars(cls)``, ``inspect.getmembers(self)``,
    ``super().__getattribute__(computed)``, ``setattr(cls, name, v)``. Overriding
    ``__getattribute__``/``__getattr__``/``__setattr__`` is not: Python calls them with the
    name the caller spelled, which keeps its method anyway.

    ``"properties"``: only what runs code when it is read or set: ``setattr(self, computed,
    v)`` (on an instance only a data descriptor's setter runs, a method is shadowed),
    ``hasattr(self, computed)`` (a property getter runs; a method is only bound), and
    ``getattr(self, computed)`` whose value is only tested (``isinstance(getattr(self, k),
    C)``, ``getattr(self, k) is None``, a local used only so) or whose name is a key of the
    instance's own ``__dict__`` (directly, or of a dict a method of the class returns built
    from it: an instance attribute shadows a method of that name).

    ``None``: nothing. A name held in the closure's data is not computed
    (:func:`~nnrag.extract.heldnames.held_name`):
    ``getattr(self, self.base_model_prefix)``, ``name = getattr(self, "_embed_layer",
    "embed")`` then ``getattr(self, name)``, ``getattr(type(self), MODES[mode])``, a loop over
    such a table or over a tuple of strings: such attributes and tables hold string literals
    of the closure, which count as spelled names anyway. In a module class (``module``)
    ``cls.__dict__`` / ``type(self).__dict__`` list the methods (but for one constant key);
    ``self.__dict__`` (instance attributes only) and a ``__getattr__`` override (it only sees
    names the class lacks, and a spelled name keeps its method) do not."""
    if not _may_look_up(node):
        return None
    parents = {child: inner for inner in ast.walk(node) for child in ast.iter_child_nodes(inner)}
    for inner in ast.walk(node):
        if (
            module
            and isinstance(inner, ast.Attribute)
            and inner.attr == "__dict__"
            and _is_class_of(inner.value, node.name)
            and not _constant_key(inner, parents)
        ):
            return "whole"
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    functions = [f for f in ast.walk(node) if isinstance(f, defs)]
    body = [s for s in node.body if not isinstance(s, defs)]
    methods = {f.name: f for f in node.body if isinstance(f, defs)}
    found: LookupReach = None
    for scope in [*functions, *body]:
        assigned = assignments(scope) if scope in functions else {}
        if isinstance(scope, defs) and scope.name in _LOOKUP_HOOKS and len(scope.args.args) > 1:
            # ``__getattribute__(self, name)``: ``name`` is what the caller spelled
            values = assigned.setdefault(scope.args.args[1].arg, [])
            at = values.index(None) if None in values else len(values)
            values[at : at + 1] = [ast.Constant(value="")]
        for inner in ast.walk(scope):
            if not isinstance(inner, ast.Call) or not inner.args:
                continue
            if isinstance(inner.func, ast.Attribute) and inner.func.attr in _READ_HOOKS:
                name = _hook_name(inner)
                if name is not None and not held_name(name, assigned):
                    return "whole"  # ``super().__getattribute__(f"get_{key}")``
                continue
            reach = _enumerates(
                inner, node.name, assigned, scope=scope, parents=parents, methods=methods
            )
            if reach == "whole":
                return reach
            found = found or reach
    return found


def _enumerates(
    call: ast.Call,
    owner: str,
    assigned: dict[str, list[ast.expr | None]],
    *,
    scope: ast.AST,
    parents: dict[ast.AST, ast.AST],
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
) -> LookupReach:
    """What one ``getattr``/``setattr``/``hasattr``/``dir``/... call on the class or an
    instance of it reaches (see :func:`self_lookups`)."""
    func = (_dotted(call.func) or "").rsplit(".", 1)[-1]
    if func not in _ENUMERATE:
        return None
    target = call.args[0]
    if isinstance(target, ast.Call) and _dotted(target.func) == "type" and target.args:
        target = target.args[0]  # getattr(type(self), name): the class
    elif isinstance(target, ast.Name) and target.id == "self" and len(call.args) > 1:
        key = call.args[1]
        if held_name(key, assigned):
            return None
        if func in ("setattr", "hasattr"):
            return "properties"
        if func == "getattr" and (
            only_tested(call, scope, parents) or instance_key(key, assigned, methods)
        ):
            return "properties"
        return "whole"
    if not (isinstance(target, ast.Name) and target.id in (*_SELF, owner)):
        return None
    name = call.args[1] if len(call.args) > 1 else None
    return None if name is not None and held_name(name, assigned) else "whole"


def _may_look_up(node: ast.ClassDef) -> bool:
    """Whether ``node`` holds what :func:`looks_itself_up` reacts to (one cheap walk: most
    classes hold none): a ``__getattribute__`` def, a ``__dict__`` attribute, a direct call of
    an attribute-reading hook (``super().__getattribute__(name)``), or a call of
    ``getattr``/``dir``/... whose first argument is ``self``, ``cls``, the class or
    ``type(...)``."""
    owners = (*_SELF, node.name)
    for inner in nodes(node):
        if isinstance(inner, ast.Attribute):
            if inner.attr == "__dict__":
                return True
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if inner.name == "__getattribute__":
                return True
        elif isinstance(inner, ast.Call) and inner.args:
            if isinstance(inner.func, ast.Attribute) and inner.func.attr in _READ_HOOKS:
                return True  # ``super().__getattribute__(name)``
            if (_dotted(inner.func) or "").rsplit(".", 1)[-1] not in _ENUMERATE:
                continue
            target = inner.args[0]
            if isinstance(target, ast.Call) and _dotted(target.func) == "type" and target.args:
                return True
            if isinstance(target, ast.Name) and target.id in owners:
                return True
    return False


def only_wraps(node: ast.stmt) -> bool:
    """A decorator ``def d(fn)`` that only calls ``fn``, hands it to ``wraps``/
    ``update_wrapper``, reads its attributes or returns it: it keeps ``fn`` nowhere, so the
    method it decorates runs only when called by name."""
    if not isinstance(node, ast.FunctionDef) or len(node.args.args) != 1:
        return False
    if node.args.vararg or node.args.kwarg or node.args.kwonlyargs or node.decorator_list:
        return False
    name = node.args.args[0].arg
    parents: dict[ast.AST, ast.AST] = {}
    for inner in ast.walk(node):
        for child in ast.iter_child_nodes(inner):
            parents[child] = inner
    for inner in ast.walk(node):
        if not (isinstance(inner, ast.Name) and inner.id == name):
            continue
        if not isinstance(inner.ctx, ast.Load):
            return False
        parent = parents.get(inner)
        if isinstance(parent, ast.Call) and parent.func is inner:
            continue  # fn(...)
        if isinstance(parent, ast.Attribute) and isinstance(parent.ctx, ast.Load):
            continue  # fn.__name__ (``fn.marker = 1`` marks it for someone who looks)
        if isinstance(parent, ast.Return):
            continue
        if isinstance(parent, ast.Call) and (_dotted(parent.func) or "").rsplit(".", 1)[-1] in (
            "wraps",
            "update_wrapper",
        ):
            continue
        return False
    return True


def keeps_argument(node: ast.stmt) -> bool:
    """Whether a decorator (or a decorator factory) of the sources may keep the function it
    decorates where code finds it without its name: a ``global``/``nonlocal`` store, an item
    or attribute stored on an object it does not make itself (``TABLE[key] = fn``,
    ``REGISTRY.last = fn``), a parameter handed to ``append``/``add``/``setattr``/a
    ``register...`` call, or a mark on a parameter other than Python's own metadata
    (``fn._exported = True``; ``fn.__doc__ = ...`` keeps it nowhere). Calling, wrapping,
    rewriting the docstring of and returning it keep it nowhere."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    functions = [
        f for f in ast.walk(node) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    params = {name for f in functions for name in parameters(f)}
    outer = parameters(node)  # the decorated function, or a factory's arguments: they outlive
    local = (
        params
        | {f.name for f in functions}
        | {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    )
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Global, ast.Nonlocal)):
            return True
        targets: list[ast.expr] = []
        if isinstance(inner, ast.Assign):
            targets = inner.targets
        elif isinstance(inner, (ast.AnnAssign, ast.AugAssign)):
            targets = [inner.target]
        for target in targets:
            if not isinstance(target, (ast.Attribute, ast.Subscript)):
                continue
            root = target.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if not isinstance(root, ast.Name) or root.id not in local:
                return True  # stored on a module-level or external object
            metadata = (
                isinstance(target, ast.Attribute)
                and target.value is root
                and target.attr in _METADATA
            )
            if root.id in outer and not metadata:
                return True  # a mark on the function, or an entry of a factory's argument
        if isinstance(inner, ast.Call):
            called = (_dotted(inner.func) or "").rsplit(".", 1)[-1]
            if called not in _STORES and "regist" not in called.lower():
                continue
            values = [*inner.args, *(k.value for k in inner.keywords)]
            receiver: ast.expr | None = (
                inner.func.value if isinstance(inner.func, ast.Attribute) else None
            )
            if called == "setattr" and inner.args:
                receiver, values = inner.args[0], values[1:]
            while isinstance(receiver, (ast.Attribute, ast.Subscript)):
                receiver = receiver.value
            kept = (
                not isinstance(receiver, ast.Name)
                or receiver.id not in local
                or receiver.id in outer
            )
            holders = params | {f.name for f in functions}
            if kept and any(isinstance(v, ast.Name) and v.id in holders for v in values):
                return True
    return False


def _hook_name(call: ast.Call) -> ast.expr | None:
    """The name argument of ``super().__getattribute__(name)``, ``self.__getattr__(name)`` or
    ``object.__setattr__(self, name, value)``; ``None`` when the call looks up another object."""
    assert isinstance(call.func, ast.Attribute)
    receiver = call.func.value
    first = call.args[0]
    if isinstance(first, ast.Name) and first.id in _SELF and len(call.args) > 1:
        return call.args[1]  # unbound: the class's method called with the instance
    bound = (isinstance(receiver, ast.Name) and receiver.id in _SELF) or (
        isinstance(receiver, ast.Call) and _dotted(receiver.func) == "super"
    )
    return first if bound else None


def _is_class_of(value: ast.expr, name: str) -> bool:
    """``cls``, ``Name``, ``type(x)`` or ``x.__class__``: an expression that is a class."""
    if isinstance(value, ast.Name):
        return value.id in ("cls", name)
    if isinstance(value, ast.Attribute):
        return value.attr == "__class__"
    return isinstance(value, ast.Call) and _dotted(value.func) == "type"


def _constant_key(node: ast.Attribute, parents: dict[ast.AST, ast.AST]) -> bool:
    """``cls.__dict__.get("name")`` or ``cls.__dict__["name"]``: one known key."""
    parent = parents.get(node)
    if isinstance(parent, ast.Subscript):
        return isinstance(parent.slice, ast.Constant)
    call = parents.get(parent) if isinstance(parent, ast.Attribute) else None
    return (
        isinstance(parent, ast.Attribute)
        and parent.attr == "get"
        and isinstance(call, ast.Call)
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
    )


def read_chains(nodes: Sequence[ast.AST]) -> set[str]:
    """Every dotted chain (and its prefixes) written in ``nodes``."""
    found: set[str] = set()
    for node in nodes:
        found |= spelled(node).chains
    return found


@dataclass(frozen=True, slots=True)
class Spelled:
    """What the code of one node spells, found in one walk (:func:`spelled`)."""

    names: frozenset[str]
    """The identifiers of its ``Name`` nodes."""
    attributes: frozenset[tuple[str | None, str]]
    """Its attribute reads and writes: (the receiver's dotted chain or ``None``, the name)."""
    words: frozenset[str]
    """Its string constants of 1 to 80 characters without whitespace."""

    @property
    def chains(self) -> set[str]:
        """Every dotted chain (and its prefixes) written in the node (:func:`read_chains`)."""
        found = set(self.names)
        found.update(f"{receiver}.{attr}" for receiver, attr in self.attributes if receiver)
        return found


def spelled(root: ast.AST) -> Spelled:
    """The names, attributes and short words written in ``root`` (every node, as
    ``ast.walk`` visits them, in one walk that skips the contexts of names)."""
    names: set[str] = set()
    attributes: set[tuple[str | None, str]] = set()
    words: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            names.add(node.id)  # type: ignore[attr-defined]  # an ast.Name: mypy does not narrow through `kind`
        elif kind is ast.Attribute:
            value = node.value  # type: ignore[attr-defined]  # an ast.Attribute: mypy does not narrow through `kind`
            attributes.add((_dotted(value), node.attr))  # type: ignore[attr-defined]  # an ast.Attribute: mypy does not narrow through `kind`
            stack.append(value)
        elif kind is ast.Constant:
            text = node.value  # type: ignore[attr-defined]  # an ast.Constant: mypy does not narrow through `kind`
            if isinstance(text, str) and 0 < len(text) <= 80 and text.split() == [text]:
                words.add(text)
        else:
            push_children(node, stack)
    return Spelled(frozenset(names), frozenset(attributes), frozenset(words))
