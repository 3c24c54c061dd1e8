"""Flat names of a closure: which bindings keep their name and which take a fresh one."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nnrag.extract.needs import COMPOUND, UnitKey, UnitScanner
from nnrag.index.symbols import BUILTINS, Symbols
from nnrag.model import BlockRef, ImportBinding, ModuleInfo, Unit
from nnrag.pyscope.scopes import build_scopes

if TYPE_CHECKING:
    from nnrag.extract.effects import Effect
    from nnrag.index.build import Index

__all__ = ["Included", "RenamePlanner", "planner_for"]


class Included(Protocol):
    """A unit of the closure as the walk holds it (see :mod:`nnrag.extract.resolve`)."""

    @property
    def info(self) -> ModuleInfo: ...
    @property
    def unit(self) -> Unit: ...
    @property
    def effect(self) -> Effect | None: ...


Wanted = tuple[tuple[str, str], str, object]
"""((module, name) of a binding, the flat name it wants, the identity of what it binds)."""


def planner_for(index: Index, symbols: Symbols, scanner: UnitScanner) -> RenamePlanner:
    """The shared :class:`RenamePlanner` of ``index`` (its memos live as long as the index)."""
    return index.analyses.of(RenamePlanner, lambda: RenamePlanner(symbols, scanner))


@dataclass(slots=True)
class RenamePlanner:
    """Per-index memos of the rename plan, and the plan of one closure (:meth:`renames`)."""

    symbols: Symbols
    scanner: UnitScanner
    same: dict[UnitKey, dict[str, object]] = field(default_factory=dict)
    identities: dict[int, tuple[ImportBinding, object]] = field(default_factory=dict)
    wants: dict[UnitKey, tuple[Wanted, ...]] = field(default_factory=dict)
    function_locals: dict[UnitKey, frozenset[str]] = field(default_factory=dict)

    def renames(
        self,
        block: BlockRef,
        order: list[UnitKey],
        units: Mapping[UnitKey, Included],
        *,
        builtins: set[tuple[str, str]],
        imports: Mapping[tuple[str, str], tuple[ModuleInfo, ImportBinding]],
    ) -> dict[tuple[str, str], str]:
        """Flat names for colliding bindings: target, builtins, imports keep theirs first."""
        claims: dict[str, object] = {}
        wanted: list[Wanted] = []
        target = ("def", block.module, block.name)
        claims[block.name] = target
        for module, name in sorted(builtins):
            owner = claims.setdefault(name, ("builtin", name))
            del module, owner
        identities = self.identities
        for (module, local), (_, binding) in sorted(imports.items()):
            known = identities.get(id(binding))
            if known is None:  # keyed by id: the binding lives in the index, as the memo
                known = identities[id(binding)] = (binding, _import_identity(binding))
            wanted.append(((module, local), local, known[1]))
        wants = self.wants
        for key in order:
            found = wants.get(key)
            if found is None:
                entry = units[key]
                same = self._same_objects(key, entry) if entry.unit.kind in COMPOUND else {}
                found = wants[key] = tuple(
                    ((key[1], name), name, same.get(name, ("def", key[1], name)))
                    for name in entry.unit.binds
                    if not (name.startswith("__") and name.endswith("__"))
                )
            wanted.extend(found)
        renames: dict[tuple[str, str], str] = {}
        taken = set(claims) | {name for _, name, _ in wanted}
        shadowed = self._shadowed(order, units)
        for (module, name), local, identity in wanted:
            owner = claims.setdefault(local, identity)
            if owner == identity and (module, name) not in shadowed:
                continue
            new = _fresh(module, local, taken)
            taken.add(new)
            claims[new] = identity
            renames[(module, name)] = new
        return renames

    def _shadowed(
        self, order: list[UnitKey], units: Mapping[UnitKey, Included]
    ) -> set[tuple[str, str]]:
        """Definitions a unit reads through a chain inside a function that binds their name.

        ``use = backend.use`` in a method would become ``use = use`` (an unbound local) with
        the flat name, so such a definition takes a fresh one.
        """
        shadowed: set[tuple[str, str]] = set()
        for key in order:
            entry = units[key]
            assert entry.effect is not None, "every included unit is visited before renaming"
            for (_, prefix), (home, name) in entry.effect.references:
                if name and prefix != name and name in self._function_locals(key, entry):
                    shadowed.add((home, name))
        return shadowed

    def _function_locals(self, key: UnitKey, entry: Included) -> frozenset[str]:
        found = self.function_locals.get(key)
        if found is None:
            tree = self.scanner.tree(entry.info, entry.unit)
            found = frozenset() if tree is None else _function_locals(tree)
            self.function_locals[key] = found
        return found

    def _same_objects(self, key: UnitKey, entry: Included) -> dict[str, object]:
        """Names a conditional unit binds by importing an inlined definition of the same name
        (``try: from .fast import fused``) or an external object (``try: import torch.fx``
        binds ``torch``): one object, so one flat name, not a collision with the definition
        or with a kept import of that object."""
        found = self.same.get(key)
        if found is not None:
            return found
        found = self.same[key] = {}
        for binding in entry.unit.imports:
            if binding.type_checking or binding.attr == "*":
                continue
            target = self.symbols.follow(entry.info, binding, binding.name, ())
            if target.kind == "external":
                found[binding.name] = _import_identity(binding)
                continue
            if (
                target.kind == "definition"
                and target.module is not None
                and target.name == binding.name
            ):
                found[binding.name] = ("def", target.module.module, target.name)
        return found


def _function_locals(tree: ast.Module) -> frozenset[str]:
    """Names bound by code inside the functions of ``tree`` (parameters, assignments, imports,
    defs, ``except``/``match`` targets; under ``global`` too): the scope model's bindings
    written in a function or lambda scope, or in a class or comprehension inside one."""
    scopes = build_scopes(tree, compiler=False)
    try:
        return frozenset(
            assignment.name
            for scope in scopes.scopes()
            for assignment in scope.bindings
            if assignment.lexical.in_function()
        )
    finally:
        scopes.release()  # freed now, not by a later garbage collection


def _fresh(module: str, name: str, taken: set[str]) -> str:
    """``<module_last>_<name>`` (leading underscores kept in front), then ``_2``, ``_3``..."""
    stripped = name.lstrip("_")
    prefix = name[: len(name) - len(stripped)]
    last = module.rsplit(".", 1)[-1].strip("_") or "mod"
    base = f"{prefix}{last}_{stripped}"
    candidate, number = base, 1
    while candidate in taken or candidate in BUILTINS:
        number += 1
        candidate = f"{base}_{number}"
    return candidate


def _import_identity(binding: ImportBinding) -> object:
    """The object an import binds, whatever its form (``from torch import nn`` = ``torch.nn``)."""
    if binding.attr is None:
        top = binding.module.split(".", 1)[0]
        return ("import", top if binding.name == top else binding.module)
    return ("import", f"{binding.module}.{binding.attr}")
