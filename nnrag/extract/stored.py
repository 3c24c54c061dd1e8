"""Functions a closure only stores in an attribute: carried only when code reads that attribute.

``self.build_func = build_from_cfg`` in a constructor, or ``Registry("x", build_func=build)``
where the constructor keeps the parameter only as ``self.build_func = build_func`` (and tests
it against ``None``): the function is a value held in the attribute ``build_func``, and only
code that reads that attribute can call it. Code reads an attribute by spelling it (``.name``
in a load, or the quoted word ``"name"``: ``getattr(obj, "name")``); copying it into the same
attribute (``self.build_func = parent.build_func``) is no read. So while no kept part of the
closure reads the attribute, the function is not carried: the block file binds its name to a
stand-in that raises when called (the original would run the function there; the block cannot
get there). Once a kept part reads the attribute, the function is carried as usual.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from nnrag.pyscope.scopes import dotted

__all__ = ["init_keeps", "loaded_attributes", "stored_names"]

KeywordAttr = Callable[[str, str | int], str | None]
"""(dotted callee, keyword or position) -> the attribute the callee keeps that argument in,
if only that."""


def stored_names(tree: ast.AST, keyword_attr: KeywordAttr) -> dict[str, str]:
    """Name -> attribute, for each name every load of which in ``tree`` is stored whole in
    that one attribute (``x.attr = name``, or a keyword argument ``keyword_attr`` says the
    callee keeps in it)."""
    roles: dict[str, set[str | None]] = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                if not isinstance(parent, ast.keyword):  # decided with its call, below
                    roles.setdefault(child.id, set()).add(_role(parent, child, keyword_attr))
            elif isinstance(child, ast.keyword) and isinstance(child.value, ast.Name):
                name = child.value.id
                role = None
                if child.arg is not None and isinstance(parent, ast.Call):
                    callee = dotted(parent.func)
                    role = keyword_attr(callee, child.arg) if callee else None
                roles.setdefault(name, set()).add(role)
    found: dict[str, str] = {}
    for name, kinds in roles.items():
        if len(kinds) == 1:
            (attr,) = kinds
            if attr is not None:
                found[name] = attr
    return found


def _role(parent: ast.AST, node: ast.Name, keyword_attr: KeywordAttr) -> str | None:
    """The attribute ``node`` is stored whole in, else ``None``."""
    if isinstance(parent, ast.Call) and node in parent.args:
        position = parent.args.index(node)
        callee = dotted(parent.func)
        if callee is None or any(isinstance(a, ast.Starred) for a in parent.args[:position]):
            return None
        return keyword_attr(callee, position)
    if (
        isinstance(parent, ast.Assign)
        and parent.value is node
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Attribute)
    ):
        return parent.targets[0].attr
    return None


def init_keeps(init: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str | int) -> str | None:
    """The attribute a constructor keeps ``parameter`` (a name, or a position after
    ``self``) in, when every use of it is ``self.attr = parameter`` (one attribute) or a
    test ``parameter is [not] None``."""
    positional = [a.arg for a in [*init.args.posonlyargs, *init.args.args]][1:]
    if isinstance(parameter, int):
        if parameter >= len(positional):
            return None
        parameter = positional[parameter]
    elif parameter not in {*positional, *(a.arg for a in init.args.kwonlyargs)}:
        return None
    kept: set[str] = set()
    for parent in ast.walk(init):
        for child in ast.iter_child_nodes(parent):
            if not (isinstance(child, ast.Name) and child.id == parameter):
                continue
            if not isinstance(child.ctx, ast.Load):
                return None  # rebound: no longer the argument
            if (
                isinstance(parent, ast.Assign)
                and parent.value is child
                and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Attribute)
            ):
                kept.add(parent.targets[0].attr)
            elif not (
                isinstance(parent, ast.Compare)
                and len(parent.ops) == 1
                and isinstance(parent.ops[0], (ast.Is, ast.IsNot))
                and all(
                    isinstance(side, ast.Constant) and side.value is None
                    for side in (parent.left, *parent.comparators)
                    if side is not child
                )
            ):
                return None
    return kept.pop() if len(kept) == 1 else None


def loaded_attributes(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """Attribute names ``nodes`` read (``.name`` in a load, but not in a copy into the same
    attribute ``x.name = y.name``) and their short quoted words (``getattr(o, "name")``)."""
    found: set[str] = set()
    for root in nodes:
        copies: set[int] = set()
        for node in ast.walk(root):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == node.targets[0].attr
            ):
                copies.add(id(node.value))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                if id(node) not in copies:
                    found.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if 0 < len(text) <= 80 and text.isidentifier():
                    found.add(text)
    return frozenset(found)
