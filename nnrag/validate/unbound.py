"""Why an imported block file leaves a name unbound: the guard of its block class's definition,
or the failed import that was a name's only binding."""

from __future__ import annotations

import ast
import re

from nnrag.check.static import is_installed
from nnrag.pyscope.bindings import ModuleBindings

__all__ = ["class_guard", "failed_import", "unbound_message"]

_COMPOUND = (ast.If, ast.Try, ast.TryStar, ast.With, ast.For, ast.While)


def class_guard(text: str, name: str) -> tuple[int, str | None] | None:
    """The line of the last module-level definition of class ``name`` in ``text`` (through
    ``if``/``try``/``with``/loops, not inside functions or classes) and the condition its
    innermost guard sets (``None``: it is at the top level); ``None`` if the file defines no
    such class."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    found: tuple[int, str | None] | None = None
    stack: list[tuple[list[ast.stmt], str | None]] = [(tree.body, None)]
    while stack:
        body, guard = stack.pop()
        for stmt in body:
            if isinstance(stmt, ast.ClassDef) and stmt.name == name:
                if found is None or stmt.lineno > found[0]:
                    found = (stmt.lineno, guard)
            elif isinstance(stmt, _COMPOUND):
                stack.extend(_branches(stmt))
    return found


def _branches(stmt: ast.stmt) -> list[tuple[list[ast.stmt], str | None]]:
    """Each statement list of a compound statement, with when it runs (``when ...``)."""
    at = f"(line {stmt.lineno})"
    if isinstance(stmt, ast.If):
        test = ast.unparse(stmt.test)
        return [
            (stmt.body, f"when `{test}` {at} is true"),
            (stmt.orelse, f"when `{test}` {at} is false"),
        ]
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        branches: list[tuple[list[ast.stmt], str | None]] = [
            (stmt.body, f"when the body of the `try:` {at} runs up to it without raising"),
            (stmt.orelse, f"when the body of the `try:` {at} raises nothing"),
            (stmt.finalbody, None),
        ]
        for handler in stmt.handlers:
            caught = ast.unparse(handler.type) if handler.type is not None else "an exception"
            branches.append((handler.body, f"when the body of the `try:` {at} raises {caught}"))
        return branches
    if isinstance(stmt, (ast.For, ast.While)):
        head = "for" if isinstance(stmt, ast.For) else "while"
        return [
            (stmt.body, f"when the `{head}` loop {at} runs an iteration"),
            (stmt.orelse, f"when the `{head}` loop {at} ends without `break`"),
        ]
    assert isinstance(stmt, ast.With)
    return [(stmt.body, f"when the `with` block {at} runs its body")]


def unbound_message(text: str, name: str, bound: object) -> str | None:
    """What to say when the imported block file binds ``name`` to ``bound``, not to an
    nn.Module class (``None`` when the file defines no class ``name``: an nnrag bug)."""
    place = class_guard(text, name)
    if place is None:
        return None
    line, guard = place
    now = "leaves it unbound" if bound is None else f"binds it to {_describe(bound)}"
    if guard is not None:
        return (
            f"{name} is defined at line {line} of the block file only {guard}, which was not "
            f"the case when the file was imported here, so the file {now}: run the block "
            "where that condition holds, or exclude it with repos.json `exclude`"
        )
    return (
        f"{name} (line {line} of the block file) is not an nn.Module class where the file ran "
        f"here: the file {now} (a base or a later binding depends on this environment, e.g. a "
        "fallback for a failed import): run the block where its imports succeed, or exclude "
        "it with repos.json `exclude`"
    )


def _describe(bound: object) -> str:
    if isinstance(bound, type):
        bases = ", ".join(base.__qualname__ for base in bound.__bases__)
        return f"a class with bases ({bases})"
    return f"a {type(bound).__name__} object"


_UNDEFINED = re.compile(r"name '(\w+)' is not defined")


def failed_import(text: str, error: BaseException, source_packages: frozenset[str]) -> str | None:
    """Why ``error`` (a ``NameError``) names a name the block file binds only by imports from
    a package that is not installed here (``try: from torch_harmonics import Basis`` with a
    handler that only prints): which import, and what to install; ``None`` for any other case
    (a name some other statement binds, a relative import, a source package). The bindings
    are the index's (:class:`~nnrag.pyscope.bindings.ModuleBindings`)."""
    found = _UNDEFINED.search(str(error)) if isinstance(error, NameError) else None
    if found is None:
        return None
    name = found.group(1)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    if not tree.body:
        return None
    bindings = ModuleBindings(module="nnrag_block", is_package=False, tree=tree).unit(
        0, len(tree.body) - 1
    )
    if name not in bindings.binds or name in bindings.assigns:
        return None
    for binding in bindings.imports:
        top = binding.module.partition(".")[0]
        if binding.name != name or binding.level or top in source_packages or is_installed(top):
            continue
        imported = binding.module if binding.attr is None else binding.attr
        alias = "" if imported.partition(".")[0] == name else f" as {name}"
        source = "" if binding.attr is None else f"from {binding.module} "
        statement = f"{source}import {imported}{alias}"
        return (
            f"`{name}` is bound only by `{statement}` (line {binding.line} of the block file), "
            f"and no package {top!r} is installed here, so that import failed and left it "
            f"unbound: install the package that provides {top!r}, or exclude the block"
        )
    return None
