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

from nnrag.extract.syntax import nodes, push_children
from nnrag.pyscope.scopes import dotted as _dotted

__all__ = [
    "Spelled",
    "keeps_argument",
    "looks_itself_up",
    "only_wraps",
    "prunable",
    "read_chains",
    "spelled",
]

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
    """``getattr(self, name)`` with a computed name, ``dir(self)``, ``vars(cls)``,
    ``inspect.getmembers(self)``, ``super().__getattribute__(computed)``: any method may be
    called. Overriding ``__getattribute__``/``__getattr__``/``__setattr__`` is not: Python
    calls them with the name the caller spelled, which keeps its method anyway.

    A name held in the closure's data is not computed (:func:`_held_name`): ``getattr(self,
    self.base_model_prefix)``, ``name = getattr(self, "_embed_layer", "embed")`` then
    ``getattr(self, name)``, ``getattr(type(self), MODES[mode])``: such attributes and tables
    hold string literals of the closure, which count as spelled names anyway. In a module class
    (``module``) ``cls.__dict__`` / ``type(self).__dict__`` list the methods (but for one
    constant key); ``self.__dict__`` (instance attributes only) and a ``__getattr__`` override
    (it only sees names the class lacks, and a spelled name keeps its method) do not."""
    if not _may_look_up(node):
        return False
    parents = {child: inner for inner in ast.walk(node) for child in ast.iter_child_nodes(inner)}
    for inner in ast.walk(node):
        if (
            module
            and isinstance(inner, ast.Attribute)
            and inner.attr == "__dict__"
            and _is_class_of(inner.value, node.name)
            and not _constant_key(inner, parents)
        ):
            return True
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    functions = [f for f in ast.walk(node) if isinstance(f, defs)]
    body = [s for s in node.body if not isinstance(s, defs)]
    for scope in [*functions, *body]:
        assigned = _assignments(scope) if scope in functions else {}
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
                if name is not None and not _held_name(name, assigned):
                    return True  # ``super().__getattribute__(f"get_{key}")``
                continue
            func = _dotted(inner.func) or ""
            if func.rsplit(".", 1)[-1] not in _ENUMERATE:
                continue
            target = inner.args[0]
            if isinstance(target, ast.Call) and _dotted(target.func) == "type" and target.args:
                target = target.args[0]  # getattr(type(self), name)
            if not (isinstance(target, ast.Name) and target.id in (*_SELF, node.name)):
                continue
            name = inner.args[1] if len(inner.args) > 1 else None
            if name is None or not _held_name(name, assigned):
                return True
    return False


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
    params = {name for f in functions for name in _parameters(f)}
    outer = _parameters(node)  # the decorated function, or a factory's arguments: they outlive
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


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = node.args
    named = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    return {a.arg for a in (*named, arguments.vararg, arguments.kwarg) if a is not None}


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


def _held_name(
    expr: ast.expr,
    assigned: dict[str, list[ast.expr | None]] | None,
    seen: frozenset[str] = frozenset(),
) -> bool:
    """A constant string, or (``assigned``: the locals of a method) a name held in the closure's
    data: an attribute of ``self``/``cls`` (``self.base_model_prefix``, ``getattr(self,
    "_embed_layer", "embed")``), an entry of a table (``MODES[mode]``), or a local assigned
    only such values. Such attributes and tables hold string literals of the closure, which
    count as spelled names."""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str)
    if assigned is None:
        return False
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id in _SELF
    if isinstance(expr, ast.Subscript):  # a table of names: TABLE[key], self.table[key]
        return isinstance(expr.value, ast.Name) or _held_name(expr.value, assigned, seen)
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "__getattribute__"
        and expr.args
    ):  # ``super().__getattribute__("attribute_map")``, ``object.__getattribute__(self, n)``
        return _held_name(expr.args[-1], assigned, seen)
    if isinstance(expr, ast.Call) and _dotted(expr.func) == "getattr" and len(expr.args) >= 2:
        owner, attr = expr.args[0], expr.args[1]
        return (
            isinstance(owner, ast.Name)
            and owner.id in _SELF
            and _held_name(attr, assigned, seen)
            and all(
                isinstance(d, ast.Constant) and (d.value is None or isinstance(d.value, str))
                for d in expr.args[2:]
            )
        )
    if isinstance(expr, ast.Name):
        if expr.id in seen:
            return True  # ``x = getattr(self, x)``: held if its other values are
        values = assigned.get(expr.id)
        inner = seen | {expr.id}
        return bool(values) and all(
            v is not None and _held_name(v, assigned, inner) for v in values or ()
        )
    return False


def _assignments(scope: ast.AST) -> dict[str, list[ast.expr | None]]:
    """Local name -> the values assigned to it in ``scope`` (``None``: bound otherwise: a
    parameter, a loop target, an unpacking)."""
    found: dict[str, list[ast.expr | None]] = {}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = scope.args
        for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            found.setdefault(arg.arg, []).append(None)
    for inner in ast.walk(scope):
        if isinstance(inner, ast.Assign):
            for target in inner.targets:
                value = inner.value if isinstance(target, ast.Name) else None
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found.setdefault(name.id, []).append(value)
        elif isinstance(inner, (ast.NamedExpr, ast.AnnAssign, ast.AugAssign)):
            if isinstance(inner.target, ast.Name):
                value = inner.value if not isinstance(inner, ast.AugAssign) else None
                found.setdefault(inner.target.id, []).append(value)
        elif isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension, ast.withitem)):
            bound = inner.target if not isinstance(inner, ast.withitem) else inner.optional_vars
            for name in ast.walk(bound) if bound is not None else ():
                if isinstance(name, ast.Name):
                    found.setdefault(name.id, []).append(None)
    return found


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
            names.add(node.id)  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            value = node.value  # type: ignore[attr-defined]
            attributes.add((_dotted(value), node.attr))  # type: ignore[attr-defined]
            stack.append(value)
        elif kind is ast.Constant:
            text = node.value  # type: ignore[attr-defined]
            if isinstance(text, str) and 0 < len(text) <= 80 and text.split() == [text]:
                words.add(text)
        else:
            push_children(node, stack)
    return Spelled(frozenset(names), frozenset(attributes), frozenset(words))
