"""The symtable oracle: compares nnrag.pyscope.scopes' classification with the compiler's."""

from __future__ import annotations

import ast
import symtable
from collections import defaultdict

from nnrag.pyscope.scopes import Scope, build_scopes

_SCOPE_OFF: int = symtable.SCOPE_OFF  # type: ignore[attr-defined]  # typeshed omits the flags
_SCOPE_MASK: int = symtable.SCOPE_MASK  # type: ignore[attr-defined]  # typeshed omits the flags


def _compiler_symbols(table: symtable.SymbolTable) -> dict[str, int]:
    symbols: dict[str, int] = table._table.symbols  # type: ignore[attr-defined]  # the raw flags
    return {
        name: (flags >> _SCOPE_OFF) & _SCOPE_MASK
        for name, flags in symbols.items()
        if not name.startswith(".")  # .0, the comprehension's implicit iterator parameter
    }


def mismatches(source: str, filename: str = "<case>", *, deferred: bool = False) -> list[str]:
    """Every difference between the model and symtable, one line each ([] when they agree).

    Each function, lambda, comprehension and class scope is paired with the symtable table
    of the same name and line (in order), and the compiler's scope of every name it lists
    (local, cell, free, global explicit/implicit) must be the model's. ``deferred``: the
    model walks the bodies of load-time defs last (as the check does, keeping them all).
    """
    tree = ast.parse(source, filename)
    table = symtable.symtable(source, filename, "exec")
    keep_all = lambda tree: lambda top, node: False  # noqa: E731  # every deferred body walked
    model = build_scopes(tree, bodies=keep_all if deferred else None)
    problems: list[str] = []
    _compare(model.module, table, problems, filename, "")
    return problems


def _mangle(klass: str, name: str) -> str:
    """The compiler's private-name mangling (``__x`` in class ``C`` is ``_C__x``)."""
    stripped = klass.lstrip("_")
    if not stripped or not name.startswith("__") or name.endswith("__") or "." in name:
        return name
    return f"_{stripped}{name}"


def _compare(
    scope: Scope, table: symtable.SymbolTable, problems: list[str], where: str, klass: str
) -> None:
    inner = scope.name if scope.kind == "class" else klass
    if scope.kind != "module":
        expected = _compiler_symbols(table)
        got_symbols = {_mangle(inner, name): kind for name, kind in scope.symbols.items()}
        if expected != got_symbols:
            for name in sorted(set(expected) | set(got_symbols)):
                want, got = expected.get(name), got_symbols.get(name)
                if want != got:
                    problems.append(
                        f"{where}:{scope.line} {scope.kind} {scope.name}: {name!r} "
                        f"symtable {want} model {got}"
                    )
    tables: dict[tuple[str, int], list[symtable.SymbolTable]] = defaultdict(list)
    for child in table.get_children():
        tables[child.get_name(), child.get_lineno()].append(child)
    for child_scope in scope.children:
        key = child_scope.name, child_scope.line
        if not tables.get(key):
            problems.append(f"{where}:{child_scope.line} no symtable table for {key}")
            continue
        _compare(child_scope, tables[key].pop(0), problems, where, inner)
    for key, left in tables.items():
        for _ in left:
            problems.append(f"{where}:{key[1]} no model scope for symtable table {key}")
