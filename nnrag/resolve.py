"""Resolution: the exact dependency closure of a block, its order, flat-name renames, problems."""

from __future__ import annotations

import ast
import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nnrag.errors import ExtractionError
from nnrag.model import (
    BlockRef,
    Category,
    Closure,
    ImportBinding,
    ModuleInfo,
    Problem,
    Unit,
    UnitRef,
)
from nnrag.needs import COMPOUND, UnitKey, UnitScanner, Use, scanner_for
from nnrag.symbols import BUILTINS, Resolution, Symbols, symbols_for

if TYPE_CHECKING:
    from nnrag.index import Index

_RESOURCE_DUNDERS = frozenset({"__file__", "__path__", "__loader__", "__spec__", "__cached__"})
_MISSING: Mapping[str, Category] = {
    "unresolved": "unresolved-name",
    "cycle": "unresolved-name",
    "native": "native-op",
    "not-indexed": "source-import",
}


def resolve(index: Index, block: BlockRef) -> Closure:
    """The closure of ``block``: internal units to inline, external imports, renames, problems."""
    return _Walk(index, symbols_for(index), scanner_for(index), block).run()


@dataclass(slots=True)
class _Included:
    info: ModuleInfo
    unit: Unit
    parent: UnitKey | None
    load: set[UnitKey] = field(default_factory=set)
    """Units that must run before this one (its load-time reads)."""
    call: set[UnitKey] = field(default_factory=set)
    """Units its functions use when called."""


class _Walk:
    """One resolution: a worklist over units, following every chain they read."""

    def __init__(
        self, index: Index, symbols: Symbols, scanner: UnitScanner, block: BlockRef
    ) -> None:
        self.index = index
        self.symbols = symbols
        self.scanner = scanner
        self.block = block
        self.units: dict[UnitKey, _Included] = {}
        self.queue: list[UnitKey] = []
        self.imports: dict[tuple[str, str], tuple[ModuleInfo, ImportBinding]] = {}
        self.references: dict[tuple[str, str], tuple[str, str]] = {}
        self.builtins: set[tuple[str, str]] = set()
        self.problems: dict[tuple[str, str, str], Problem] = {}
        self.namespaces: dict[str, dict[str, tuple[str, str]]] = {}
        """Internal modules used as objects -> attr -> (module, name) it denotes."""
        self.escaped: set[str] = set()
        """Modules whose object escapes (``vars(m)``): all their public names are members."""

    # -- the walk ----------------------------------------------------------------------------

    def run(self) -> Closure:
        info = self.index.module(self.block.module, prefer=self.block.source)
        if info is None or info.source != self.block.source:
            raise ExtractionError(
                f"module {self.block.module} is not in the index; run `nnrag index` again",
                block_id=self.block.id,
            )
        roots = self._target_units(info)
        for unit in roots:
            self._include(info, unit, parent=None)
        while self.queue:
            self._visit(self.queue.pop())
        order = self._order()
        renames = self._renames(order)
        imports = tuple(
            binding
            for _, (_, binding) in sorted(
                self.imports.items(), key=lambda item: (item[0][0], item[1][1].line, item[0][1])
            )
        )
        problems = sorted(self.problems.values(), key=lambda p: (p.category, p.location, p.message))
        return Closure(
            block=self.block,
            units=tuple(UnitRef(source=k[0], module=k[1], index=k[2]) for k in order),
            imports=imports,
            renames=renames,
            problems=tuple(problems),
            references=dict(sorted(self.references.items())),
            namespaces={
                module: tuple(sorted((attr, *target) for attr, target in members.items()))
                for module, members in sorted(self.namespaces.items())
            },
        )

    def _target_units(self, info: ModuleInfo) -> tuple[Unit, ...]:
        for unit in info.units:
            for klass in unit.classes:
                if klass.name == self.block.name and klass.line == self.block.line:
                    return (unit,)
        units = tuple(u for u in info.units if self.block.name in u.binds and not u.type_checking)
        if not units:
            raise ExtractionError(
                f"class {self.block.name} is no longer in {info.path}; run `nnrag index` again",
                block_id=self.block.id,
            )
        return units[-1:]

    def _include(self, info: ModuleInfo, unit: Unit, parent: UnitKey | None) -> UnitKey:
        key = (info.source, info.module, unit.index)
        if key not in self.units:
            self.units[key] = _Included(info=info, unit=unit, parent=parent)
            self.queue.append(key)
        return key

    def _visit(self, key: UnitKey) -> None:
        entry = self.units[key]
        info = entry.info
        summary = self.scanner.summary(info, entry.unit, self.symbols)
        for home, unit, load in summary.deps:
            dep = self._include(home, unit, parent=key)
            if dep != key:
                (entry.load if load else entry.call).add(dep)
        for local, home, binding in summary.imports:
            self.imports.setdefault(local, (home, binding))
        self.references.update(summary.references)
        self.builtins.update(summary.builtins)
        for use in summary.others:
            self._use(key, info, use)
        for chain, line in entry.unit.local_reads:
            self._local_read(key, info, chain, line)
        for finding in summary.findings:
            registry = finding.registry
            if registry is not None:
                for registration in registry.registrations:
                    entry.call.add(self._include(registry.home, registration, parent=key))
                if not registry.elsewhere:
                    continue  # every registration is in the home module, now inlined
            self._problem(
                key, info, finding.category, finding.message, line=finding.line, col=finding.col
            )

    def _use(self, key: UnitKey, info: ModuleInfo, use: Use) -> None:
        """A read that becomes a problem (see :meth:`UnitScanner.summary`)."""
        found = use.found
        if found.kind == "external":
            self._problem(
                key,
                info,
                "native-op",
                f"calls {found.target}, an operator registered by a compiled extension "
                "of the source",
                name=use.root,
                line=use.line,
            )
        elif found.kind == "dunder":
            if found.name in _RESOURCE_DUNDERS:
                self._problem(
                    key,
                    info,
                    "resource-file",
                    f"reads {use.chain!r}: a file next to the source module, absent from the "
                    "standalone block (ship the resource or pass its path in)",
                    name=use.root,
                    line=use.line,
                )
        elif found.kind == "module" and found.module is not None:
            # an internal module used as an object becomes a namespace of inlined members
            self.namespaces.setdefault(found.module.module, {})
            if not use.line:  # the chain denotes the module object itself: it escapes
                self.references[(info.module, use.prefix)] = (found.module.module, "")
                self._module_object(key, (info, use.chain), found.module, (), load=use.load)
        elif found.kind == "missing":
            self._missing(key, info, use.chain, found, name=use.root, line=use.line)

    # -- modules used as objects -------------------------------------------------------------

    def _local_read(self, key: UnitKey, info: ModuleInfo, chain: str, line: int) -> None:
        """A chain rooted at a name a local import binds (``aggr.MultiAggregation``)."""
        parts = chain.split(".")
        binding = next(
            (
                b
                for b in self.units[key].unit.local_imports
                if b.name == parts[0] and b.line == line
            ),
            None,
        )
        if binding is None or self.index.source_of_module(binding.module) is None:
            return
        found = self.symbols.follow(info, binding, parts[0], ())
        if found.kind == "module" and found.module is not None:
            load = self._in_class_body(info, self.units[key].unit, line)
            self._module_object(key, (info, chain), found.module, tuple(parts[1:]), load=load)

    def _in_class_body(self, info: ModuleInfo, unit: Unit, line: int) -> bool:
        """Whether the import at ``line`` runs at load time (directly in a class body)."""
        if unit.kind != "class":
            return False
        tree = self.scanner.tree(info, unit)
        relative = line - unit.start_line + 1
        return tree is not None and any(
            isinstance(node, ast.ClassDef)
            and any(
                isinstance(stmt, ast.Import | ast.ImportFrom) and stmt.lineno == relative
                for stmt in node.body
            )
            for node in ast.walk(tree)
        )

    def _module_object(
        self,
        key: UnitKey,
        where: tuple[ModuleInfo, str],
        module: ModuleInfo,
        rest: tuple[str, ...],
        *,
        load: bool,
    ) -> None:
        """``module`` used as an object: its attribute ``rest[0]`` (then ``rest[1:]`` inside
        it when that is a submodule) is a member; with no ``rest`` the object escapes, and
        every public name (``__all__``, else public top-level names) is a member."""
        self.namespaces.setdefault(module.module, {})
        if rest:
            self._member(key, where, module, rest[0], rest[1:], load=load, escape=False)
            return
        if module.module in self.escaped:
            return
        self.escaped.add(module.module)
        for name in sorted(self.symbols.exports(module)):
            self._member(key, where, module, name, (), load=load, escape=True)

    def _member(
        self,
        key: UnitKey,
        where: tuple[ModuleInfo, str],
        module: ModuleInfo,
        attr: str,
        rest: tuple[str, ...],
        *,
        load: bool,
        escape: bool,
    ) -> None:
        members = self.namespaces[module.module]
        found = self.symbols.lookup(module, (attr,))
        home = found.module
        entry = self.units[key]
        if found.kind == "definition" and home is not None:
            for unit in found.units:
                dep = self._include(home, unit, parent=key)
                if dep != key:
                    (entry.load if load else entry.call).add(dep)
            members[attr] = (home.module, found.name)
        elif found.kind == "external" and home is not None and found.binding is not None:
            if escape and attr not in (module.all_names or ()):
                return  # without ``__all__``, the public names are the module's definitions
            self.imports.setdefault((home.module, found.name), (home, found.binding))
            members[attr] = (home.module, found.name)
        elif found.kind == "module" and home is not None:
            if escape and attr not in (module.all_names or ()):
                return  # submodules enumerate only when ``__all__`` lists them
            members[attr] = (home.module, "")
            self._module_object(key, where, home, rest, load=load)
        elif found.kind == "dunder" and attr == "__name__":
            members[attr] = (module.module, attr)  # emitted as the module's name
        elif found.kind == "dunder" and attr in _RESOURCE_DUNDERS and not escape:
            info, chain = where
            self._problem(
                key,
                info,
                "resource-file",
                f"reads {chain!r}: a file of the source module, absent from the standalone "
                "block (ship the resource or pass its path in)",
                name=chain.split(".", 1)[0],
            )
        elif found.kind == "missing" and not escape:
            info, chain = where
            self._missing(key, info, chain, found, name=chain.split(".", 1)[0])

    def _missing(
        self,
        key: UnitKey,
        info: ModuleInfo,
        chain: str,
        found: Resolution,
        *,
        name: str,
        line: int = 0,
    ) -> None:
        reason = found.reason or "unresolved"
        category = _MISSING[reason]
        if reason == "native":
            message = f"{chain!r} comes from {found.target}, a compiled extension of the source"
        elif reason == "not-indexed":
            message = f"{chain!r} comes from {found.target}, which is not indexed"
        elif found.binding is not None and found.target:
            message = f"{chain!r} is imported from {found.target}, which does not exist"
        else:
            message = f"name {chain!r} is not defined anywhere"
            if found.module is not None and found.module.module != info.module:
                message += f" (looked up in {found.module.module})"
        self._problem(key, info, category, message, name=name, line=line)

    # -- problems ----------------------------------------------------------------------------

    def _problem(
        self,
        key: UnitKey,
        info: ModuleInfo,
        category: Category,
        message: str,
        *,
        name: str = "",
        line: int = 0,
        col: int = 0,
    ) -> None:
        unit = self.units[key].unit
        if not line:
            line, col = self.scanner.position(info, unit, name)
        location = f"{info.path}:{line}:{col or 1}"
        path = self._path(key)
        ident = (category, location, message)
        if ident not in self.problems:
            self.problems[ident] = Problem(
                category=category, message=message, path=path, location=location
            )

    def _path(self, key: UnitKey | None) -> tuple[str, ...]:
        labels: list[str] = []
        seen: set[UnitKey] = set()
        while key is not None and key not in seen:
            seen.add(key)
            entry = self.units[key]
            labels.append(_label(entry.unit))
            key = entry.parent
        return tuple(reversed(labels))

    # -- order -------------------------------------------------------------------------------

    def _order(self) -> list[UnitKey]:
        """Topological over load-time needs (stable by source, module, line); cycles broken."""
        needs: dict[UnitKey, set[UnitKey]] = {}
        calls = _CallClosure(self.units, self.scanner.reach)
        by_name: dict[tuple[str, str, str], list[UnitKey]] = {}
        for key, entry in self.units.items():
            wanted = set()
            for dep in entry.load:
                wanted.add(dep)
                if _runs_at_load(self.units[dep].unit, reader=entry.unit):
                    wanted |= calls.of(dep)
            wanted.discard(key)
            needs[key] = wanted
            for name in entry.unit.binds:
                by_name.setdefault((key[0], key[1], name), []).append(key)
        for keys in by_name.values():
            keys.sort(key=self._sort_key)
            for earlier, later in itertools.pairwise(keys):
                needs[later].add(earlier)
        return _topological(needs, self._sort_key)

    def _sort_key(self, key: UnitKey) -> tuple[str, str, int, int]:
        unit = self.units[key].unit
        return (key[0], key[1], unit.start_line, unit.index)

    # -- renames -----------------------------------------------------------------------------

    def _renames(self, order: list[UnitKey]) -> dict[tuple[str, str], str]:
        """Flat names for colliding bindings: target, builtins, imports keep theirs first."""
        claims: dict[str, object] = {}
        wanted: list[tuple[tuple[str, str], str, object]] = []
        target = ("def", self.block.module, self.block.name)
        claims[self.block.name] = target
        for module, name in sorted(self.builtins):
            owner = claims.setdefault(name, ("builtin", name))
            del module, owner
        for (module, local), (_, binding) in sorted(self.imports.items()):
            wanted.append(((module, local), local, _import_identity(binding)))
        for key in order:
            entry = self.units[key]
            same = self._same_objects(entry) if entry.unit.kind in COMPOUND else {}
            for name in entry.unit.binds:
                if name.startswith("__") and name.endswith("__"):
                    continue
                identity = same.get(name, ("def", key[1], name))
                wanted.append(((key[1], name), name, identity))
        renames: dict[tuple[str, str], str] = {}
        taken = set(claims) | {name for _, name, _ in wanted}
        for (module, name), local, identity in wanted:
            owner = claims.setdefault(local, identity)
            if owner == identity:
                continue
            new = _fresh(module, local, taken)
            taken.add(new)
            claims[new] = identity
            renames[(module, name)] = new
        return renames

    def _same_objects(self, entry: _Included) -> dict[str, object]:
        """Names a conditional unit binds by importing an inlined definition of the same name
        (``try: from .fast import fused``): one object, so one flat name, not a collision."""
        found: dict[str, object] = {}
        for binding in entry.unit.imports:
            if binding.type_checking or binding.attr in (None, "*"):
                continue
            target = self.symbols.follow(entry.info, binding, binding.name, ())
            if (
                target.kind == "definition"
                and target.module is not None
                and target.name == binding.name
            ):
                found[binding.name] = ("def", target.module.module, target.name)
        return found


SortKey = tuple[str, str, int, int]


def _topological(
    needs: Mapping[UnitKey, set[UnitKey]], sort_key: Callable[[UnitKey], SortKey]
) -> list[UnitKey]:
    """Dependencies first, ties broken by ``sort_key``; a cycle stays together, in file order.

    The strongly connected components of the ``needs`` graph (Tarjan) are ordered with
    Kahn's algorithm, smallest component key first; members of a component by their key.
    """
    components = _components(needs)
    of = {key: number for number, members in enumerate(components) for key in members}
    first = [min(sort_key(k) for k in members) for members in components]
    users: list[set[int]] = [set() for _ in components]
    pending = [0] * len(components)
    for number, members in enumerate(components):
        deps = {of[dep] for key in members for dep in needs[key]} - {number}
        pending[number] = len(deps)
        for dep in deps:
            users[dep].add(number)
    ready = [(first[n], n) for n in range(len(components)) if not pending[n]]
    heapq.heapify(ready)
    order: list[UnitKey] = []
    while ready:
        _, number = heapq.heappop(ready)
        order.extend(sorted(components[number], key=sort_key))
        for user in users[number]:
            pending[user] -= 1
            if not pending[user]:
                heapq.heappush(ready, (first[user], user))
    return order


def _components(needs: Mapping[UnitKey, set[UnitKey]]) -> list[list[UnitKey]]:
    """Strongly connected components (iterative Tarjan).

    Membership does not depend on visiting order; callers order components by their keys.
    """
    index: dict[UnitKey, int] = {}
    low: dict[UnitKey, int] = {}
    stack: list[UnitKey] = []
    on_stack: set[UnitKey] = set()
    found: list[list[UnitKey]] = []
    for root in needs:
        if root in index:
            continue
        work: list[tuple[UnitKey, Iterator[UnitKey]]] = [(root, iter(needs[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(needs[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members: list[UnitKey] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                found.append(members)
    return found


_CREATION_HOOKS = frozenset({"__init_subclass__", "__set_name__", "__new__", "__prepare__"})


def _runs_at_load(dep: Unit, *, reader: Unit) -> bool:
    """Whether code of ``dep`` runs while ``reader`` executes (so what it calls is needed then).

    A function read at load time is a decorator or a call; a class read by a statement that
    is not a class is instantiated or called; a class with creation hooks
    (``__init_subclass__``, a metaclass' ``__new__``) runs them for every subclass.
    """
    if dep.kind == "def":
        return True
    if dep.kind != "class":
        return False
    return reader.kind != "class" or any(_CREATION_HOOKS & set(c.methods) for c in dep.classes)


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


def _label(unit: Unit) -> str:
    if unit.binds:
        return unit.binds[0]
    return f"<{unit.kind} at line {unit.start_line}>"


class _CallClosure:
    """Units reachable through call-time edges (what runs when a unit's functions run).

    Edges of a unit do not depend on the block being resolved, so the sets are kept per
    index (``memo``) and shared by every resolution.
    """

    def __init__(
        self, units: Mapping[UnitKey, _Included], memo: dict[UnitKey, frozenset[UnitKey]]
    ) -> None:
        self.units = units
        self.memo = memo

    def of(self, start: UnitKey) -> frozenset[UnitKey]:
        cached = self.memo.get(start)
        if cached is not None:
            return cached
        seen: set[UnitKey] = set()
        stack = [start]
        while stack:
            key = stack.pop()
            known = self.memo.get(key) if key != start else None
            if known is not None:
                seen |= known
                seen.add(key)
                continue
            for dep in _edges(self.units[key]):
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        seen.discard(start)
        result = frozenset(seen)
        self.memo[start] = result
        return result


def _edges(entry: _Included) -> Iterable[UnitKey]:
    yield from entry.call
    yield from entry.load
