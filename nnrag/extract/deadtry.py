"""Imports of a module-level ``try`` that never bind: the body always raises before them, or
the handler rebinds every name they bound.

``try: from .a import X; from .gone import Y; from .b import Z`` / ``except ImportError:
X = Z = None``, where ``.gone`` lacks ``Y`` in these sources (the import always raises,
:meth:`~nnrag.index.symbols.Symbols.absent_import`): ``Z``'s import never runs (nor does
anything else after the raise, nor the ``else:`` clause), and ``X``'s runs but the handler
rebinds ``X`` at once. So neither is a dependency: their definitions (and what those read)
are not carried, and the block file writes ``pass`` in their place. Only imports of the
sources are dropped before the raise (an external import may fail, or import a package
for its side effects); after it, every import is dead. The first handler of the ``try``
must catch ``ImportError`` for the rule on imports before the raise.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from nnrag.model import ImportBinding, Unit

__all__ = ["dead_imports"]

_CATCH_ALL = frozenset({"ImportError", "Exception", "BaseException"})


def dead_imports(
    tree: ast.Module,
    unit: Unit,
    absent: Callable[[ImportBinding], bool],
    internal: Callable[[ImportBinding], bool],
) -> frozenset[tuple[int, str]]:
    """``(line of the file, local name)`` of each import binding of the ``try`` unit ``unit``
    (``tree``: its statements, lines relative to its first) that never binds a name the
    block can read. ``absent``: whether a binding always raises; ``internal``: whether it
    imports from the sources."""
    if unit.kind != "try" or len(tree.body) != 1 or not isinstance(tree.body[0], ast.Try):
        return frozenset()
    node = tree.body[0]
    offset = unit.start_line - 1
    by_line: dict[int, dict[str, ImportBinding]] = {}
    for binding in unit.imports:
        by_line.setdefault(binding.line - offset, {})[binding.name] = binding
    raising, failing = _first_raise(node, by_line, absent)
    if raising is None:
        return frozenset()
    dead: set[tuple[int, str]] = set()
    for stmt in [*node.body[raising + 1 :], *node.orelse]:
        for inner in ast.walk(stmt):
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                dead.update((inner.lineno, _local(alias)) for alias in inner.names)
    rebound = _rebound(node.handlers[0]) if node.handlers else frozenset()
    for position, stmt in enumerate(node.body[: raising + 1]):
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        bindings = by_line.get(stmt.lineno, {})
        aliases = [_local(alias) for alias in stmt.names]
        if position == raising:  # the names after the failing one are never bound
            dead.update((stmt.lineno, name) for name in aliases[failing + 1 :])
            aliases = aliases[:failing]
        for name in aliases:
            found = bindings.get(name)
            if found is not None and internal(found) and not absent(found) and name in rebound:
                dead.add((stmt.lineno, name))
    return frozenset((line + offset, name) for line, name in dead)


def _first_raise(
    node: ast.Try,
    by_line: dict[int, dict[str, ImportBinding]],
    absent: Callable[[ImportBinding], bool],
) -> tuple[int | None, int]:
    """(position in the ``try`` body of the first statement that always raises, position of
    its failing alias when it is an import)."""
    for position, stmt in enumerate(node.body):
        if isinstance(stmt, ast.Raise):
            return position, 0
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            bindings = by_line.get(stmt.lineno, {})
            for number, alias in enumerate(stmt.names):
                binding = bindings.get(_local(alias))
                if binding is not None and absent(binding):
                    return position, number
    return None, 0


def _local(alias: ast.alias) -> str:
    return alias.asname or alias.name.split(".")[0]


def _rebound(handler: ast.ExceptHandler) -> frozenset[str]:
    """The names an ``ImportError`` handler binds in every run of it (its top-level
    assignments and imports); none if it does not catch ``ImportError``."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    if handler.type is not None and not any(
        isinstance(kind, ast.Name) and kind.id in _CATCH_ALL for kind in kinds
    ):
        return frozenset()
    names: set[str] = set()
    for stmt in handler.body:
        if isinstance(stmt, ast.Assign):
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            if isinstance(stmt.target, ast.Name):
                names.add(stmt.target.id)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update(_local(alias) for alias in stmt.names)
    return frozenset(names)
