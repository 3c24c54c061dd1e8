"""Names a method's lookups of its own instance can produce (:mod:`nnrag.extract.lookups`).

A lookup ``getattr(self, name)`` reaches only what its name can be: a string literal, an
attribute of ``self`` or a table of the closure (held: spelled anyway), a loop variable over
such a table or over a tuple of strings, a key of the instance's own ``__dict__`` (an
instance attribute, which shadows a method of that name); and a value that is only tested
(``isinstance(getattr(self, k), C)``) calls nothing it finds.
"""

from __future__ import annotations

import ast

from nnrag.pyscope.scopes import dotted as _dotted

__all__ = ["assignments", "held_name", "instance_key", "only_tested", "parameters"]

_SELF = frozenset({"self", "cls"})


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = node.args
    named = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    return {a.arg for a in (*named, arguments.vararg, arguments.kwarg) if a is not None}


def held_name(
    expr: ast.expr,
    assigned: dict[str, list[ast.expr | None]] | None,
    seen: frozenset[str] = frozenset(),
) -> bool:
    """A constant string, or (``assigned``: the locals of a method) a name held in the closure's
    data: an attribute of ``self``/``cls`` (``self.base_model_prefix``, ``getattr(self,
    "_embed_layer", "embed")``), an entry of a table (``MODES[mode]``), or a local assigned
    only such values. Such attributes and tables hold string literals of the closure, which
    count as spelled names."""
    if isinstance(expr, ast.Constant):  # ``None``: ``getattr(self, None)`` finds nothing
        return isinstance(expr.value, str) or expr.value is None
    if assigned is None:
        return False
    if isinstance(expr, ast.Starred):  # a loop variable: an element of what it iterates
        return _held_iterable(expr.value, assigned, seen)
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id in _SELF
    if isinstance(expr, ast.Subscript):  # a table of names: TABLE[key], self.table[key]
        return isinstance(expr.value, ast.Name) or held_name(expr.value, assigned, seen)
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "__getattribute__"
        and expr.args
    ):  # ``super().__getattribute__("attribute_map")``, ``object.__getattribute__(self, n)``
        return held_name(expr.args[-1], assigned, seen)
    if isinstance(expr, ast.Call) and _dotted(expr.func) == "getattr" and len(expr.args) >= 2:
        owner, attr = expr.args[0], expr.args[1]
        return (
            isinstance(owner, ast.Name)
            and owner.id in _SELF
            and held_name(attr, assigned, seen)
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
            v is not None and held_name(v, assigned, inner) for v in values or ()
        )
    return False


def assignments(scope: ast.AST) -> dict[str, list[ast.expr | None]]:
    """Local name -> the values assigned to it in ``scope`` (``None``: bound otherwise: a
    parameter, a loop target, an unpacking)."""
    found: dict[str, list[ast.expr | None]] = {}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for arg in parameters(scope):
            found.setdefault(arg, []).append(None)
    for inner in ast.walk(scope):
        if isinstance(inner, ast.Assign):
            for target in inner.targets:
                value = inner.value if isinstance(target, ast.Name) else None
                for name in ast.walk(target):  # ``d[k] = v`` binds no name (``k`` is read)
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        found.setdefault(name.id, []).append(value)
        elif isinstance(inner, (ast.NamedExpr, ast.AnnAssign, ast.AugAssign)):
            if isinstance(inner.target, ast.Name):
                value = inner.value if not isinstance(inner, ast.AugAssign) else None
                found.setdefault(inner.target.id, []).append(value)
        elif isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension)):
            element = _element(inner.target, inner.iter)
            for name in ast.walk(inner.target):
                if isinstance(name, ast.Name):
                    found.setdefault(name.id, []).append(element.get(name.id))
        elif isinstance(inner, ast.withitem) and inner.optional_vars is not None:
            for name in ast.walk(inner.optional_vars):
                if isinstance(name, ast.Name):
                    found.setdefault(name.id, []).append(None)
    return found


def _element(target: ast.expr, iterable: ast.expr) -> dict[str, ast.expr]:
    """The loop variable that takes the keys of ``iterable`` (``for k in it``, ``for k, v in
    d.items()``), as a marker ``Starred(iterable)`` (:func:`_held_name` reads it)."""
    if isinstance(target, ast.Name):
        return {target.id: ast.Starred(value=iterable)}
    if (
        isinstance(target, ast.Tuple)
        and target.elts
        and isinstance(target.elts[0], ast.Name)
        and isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Attribute)
        and iterable.func.attr == "items"
        and not iterable.args
    ):
        return {target.elts[0].id: ast.Starred(value=iterable.func.value)}
    return {}


def _held_iterable(
    expr: ast.expr, assigned: dict[str, list[ast.expr | None]], seen: frozenset[str]
) -> bool:
    """An iterable whose elements (keys) are held names: a tuple/list/set of held names, an
    attribute of ``self``/``cls``, a module-level table, ``d.keys()``/``sorted(d)`` of one,
    a sum of such, or a local assigned only such."""
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return all(held_name(e, assigned, seen) for e in expr.elts)
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.value, ast.Name) and expr.value.id in _SELF
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _held_iterable(expr.left, assigned, seen) and _held_iterable(
            expr.right, assigned, seen
        )
    if isinstance(expr, ast.Call) and len(expr.args) <= 1 and not expr.keywords:
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "keys" and not expr.args:
            return _held_iterable(expr.func.value, assigned, seen)
        if _dotted(expr.func) in ("sorted", "list", "tuple", "set") and expr.args:
            return _held_iterable(expr.args[0], assigned, seen)
        return False
    if isinstance(expr, ast.Name):
        if expr.id in seen:
            return True
        values = assigned.get(expr.id)
        if values is None:
            return True  # a module-level table
        inner = seen | {expr.id}
        return all(v is not None and _held_iterable(v, assigned, inner) for v in values)
    return False


_TESTS = (ast.If, ast.While, ast.IfExp, ast.Assert)


def only_tested(call: ast.Call, scope: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """``getattr(...)`` whose value is only tested (``isinstance(v, C)``, ``v is None``, ``if
    v``), directly or through a local used only so: whatever it finds is never called."""
    parent = parents.get(call)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = parent.targets[0]
        if not isinstance(target, ast.Name):
            return False
        loads = [
            n
            for n in ast.walk(scope)
            if isinstance(n, ast.Name) and n.id == target.id and isinstance(n.ctx, ast.Load)
        ]
        return all(_tested(load, parents) for load in loads)
    return _tested(call, parents)


def _tested(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    if isinstance(parent, ast.Call):
        return (
            _dotted(parent.func) in ("isinstance", "issubclass", "callable")
            and bool(parent.args)
            and parent.args[0] is node
        )
    if isinstance(parent, ast.BoolOp) or (
        isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
    ):
        return _tested(parent, parents)
    if isinstance(parent, _TESTS):
        return parent.test is node
    return isinstance(parent, ast.Compare)


_DICT_COPIES = frozenset({"copy.deepcopy", "copy.copy", "deepcopy", "dict"})


def instance_key(
    name: ast.expr,
    assigned: dict[str, list[ast.expr | None]],
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
) -> bool:
    """A loop variable over the keys of the instance's ``__dict__`` (or a copy of it, or the
    dict a method of the class returns built from it): an instance attribute's name."""
    if not isinstance(name, ast.Name):
        return False
    values = assigned.get(name.id)
    return bool(values) and all(
        isinstance(v, ast.Starred) and _instance_dict(v.value, assigned, methods)
        for v in values or ()
    )


def _instance_dict(
    expr: ast.expr,
    assigned: dict[str, list[ast.expr | None]],
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] | None,
    seen: frozenset[str] = frozenset(),
) -> bool:
    """``self.__dict__``, ``vars(self)``, a copy of one, a local assigned only such, or
    ``self.method()`` of a method (``methods``) that returns only such."""
    if isinstance(expr, ast.Attribute) and expr.attr == "__dict__":
        return isinstance(expr.value, ast.Name) and expr.value.id == "self"
    if isinstance(expr, ast.Name):
        values = assigned.get(expr.id)
        if expr.id in seen or not values:
            return expr.id in seen
        inner = seen | {expr.id}
        return all(v is not None and _instance_dict(v, assigned, methods, inner) for v in values)
    if not isinstance(expr, ast.Call):
        return False
    func = _dotted(expr.func) or ""
    if func == "vars":
        return len(expr.args) == 1 and _is_self(expr.args[0])
    if func in _DICT_COPIES:
        return len(expr.args) == 1 and _instance_dict(expr.args[0], assigned, methods, seen)
    if not isinstance(expr.func, ast.Attribute) or expr.args:
        return False
    if expr.func.attr == "copy":
        return _instance_dict(expr.func.value, assigned, methods, seen)
    method = methods.get(expr.func.attr) if methods else None
    if method is None or not _is_self(expr.func.value):
        return False
    local = assignments(method)
    returns = [r.value for r in ast.walk(method) if isinstance(r, ast.Return)]
    return all(
        isinstance(r, ast.Name)
        and _instance_dict(r, local, None)
        and _constant_keys(method, r.id, local)
        for r in returns
    ) and bool(returns)


def _constant_keys(method: ast.AST, name: str, local: dict[str, list[ast.expr | None]]) -> bool:
    """Whether every key ``method`` adds to its local dict ``name`` is a constant string or
    one of its own keys (no ``d[computed] = v``, ``d.update(...)``, ``d.setdefault(...)``)."""
    for inner in ast.walk(method):
        if (
            isinstance(inner, ast.Subscript)
            and isinstance(inner.ctx, ast.Store)
            and isinstance(inner.value, ast.Name)
            and inner.value.id == name
            and not (isinstance(inner.slice, ast.Constant) and isinstance(inner.slice.value, str))
            and not _own_key(inner.slice, name, local)
        ):
            return False
        if (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Attribute)
            and inner.func.attr in ("update", "setdefault", "__setitem__")
            and isinstance(inner.func.value, ast.Name)
            and inner.func.value.id == name
        ):
            return False
    return True


def _own_key(key: ast.expr, name: str, local: dict[str, list[ast.expr | None]]) -> bool:
    """``key`` is a loop variable over the keys of the dict ``name`` itself."""
    values = local.get(key.id) if isinstance(key, ast.Name) else None
    return bool(values) and all(
        isinstance(v, ast.Starred) and isinstance(v.value, ast.Name) and v.value.id == name
        for v in values or ()
    )


def _is_self(expr: ast.expr | None) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "self"
