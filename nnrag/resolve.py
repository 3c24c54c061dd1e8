"""Resolution: the exact dependency closure of a block, its order, flat-name renames, problems."""

from __future__ import annotations

import ast
import heapq
import itertools
import weakref
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
from nnrag.symbols import BUILTINS, Resolution, Symbols, symbols_for

if TYPE_CHECKING:
    from nnrag.index import Index

UnitKey = tuple[str, str, int]
"""(source, module, unit index)."""

_COMPOUND = frozenset({"if", "try", "with"})
_RESOURCE_DUNDERS = frozenset({"__file__", "__path__", "__loader__", "__spec__", "__cached__"})
_MISSING: Mapping[str, Category] = {
    "unresolved": "unresolved-name",
    "cycle": "unresolved-name",
    "native": "native-op",
    "not-indexed": "source-import",
}


def resolve(index: Index, block: BlockRef) -> Closure:
    """The closure of ``block``: internal units to inline, external imports, renames, problems."""
    scanner = _SCANNERS.get(index)
    if scanner is None:
        scanner = _SCANNERS[index] = UnitScanner(index)
    return _Walk(index, symbols_for(index), scanner, block).run()


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
        elif found.kind == "module":
            where = "inside a function or conditional" if use.line else f"as {use.chain!r}"
            self._problem(
                key,
                info,
                "source-import",
                f"uses module {found.target} of the source {where}; a module cannot be inlined",
                name=use.root,
                line=use.line,
            )
        elif found.kind == "missing":
            self._missing(key, info, use.chain, found, name=use.root, line=use.line)

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
            same = self._same_objects(entry) if entry.unit.kind in _COMPOUND else {}
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
    """Strongly connected components (iterative Tarjan), in a deterministic order."""
    index: dict[UnitKey, int] = {}
    low: dict[UnitKey, int] = {}
    stack: list[UnitKey] = []
    on_stack: set[UnitKey] = set()
    found: list[list[UnitKey]] = []
    for root in sorted(needs):
        if root in index:
            continue
        work: list[tuple[UnitKey, Iterator[UnitKey]]] = [(root, iter(sorted(needs[root])))]
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
                    work.append((child, iter(sorted(needs[child]))))
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


# --------------------------------------------------------------------------- unit scanning

_SCANNERS: weakref.WeakKeyDictionary[Index, UnitScanner] = weakref.WeakKeyDictionary()
_DYNAMIC_ROOTS = frozenset({"getattr", "globals", "vars", "eval", "exec", "__import__"})
_DYNAMIC_ROOTS |= frozenset({"importlib", "sys", "import_module"})
_EMPTY_FACTORIES = frozenset({"dict", "OrderedDict", "defaultdict", "collections.OrderedDict"})
_EMPTY_FACTORIES |= frozenset({"collections.defaultdict"})
_WRITERS = frozenset({"update", "setdefault", "__setitem__"})
_NAMESPACE_READS = frozenset({"get", "items", "values", "keys", "__getitem__", "copy", "pop"})


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem found in one unit's syntax (position is absolute in the file, col 1-based)."""

    category: Category
    message: str
    line: int
    col: int
    registry: Registry | None = None
    """For a registry lookup: the registry (its home registrations are inlined)."""


@dataclass(frozen=True, slots=True)
class Use:
    """One name a unit needs, resolved once per index: a chain it reads or an import it keeps."""

    chain: str
    root: str
    prefix: str
    """The part of ``chain`` the resolution consumed (``layers.Mlp`` of ``layers.Mlp.x``)."""
    load: bool
    found: Resolution
    crosses: bool
    """The flat name differs from the chain as written (another module, alias or attribute)."""
    line: int = 0
    """For an import inside the unit's text: its line."""


@dataclass(frozen=True, slots=True)
class Summary:
    """What including one unit adds to a closure (computed once per unit and index)."""

    deps: tuple[tuple[ModuleInfo, Unit, bool], ...]
    """(module, unit, is a load-time need) of every internal definition it reads."""
    imports: tuple[tuple[tuple[str, str], ModuleInfo, ImportBinding], ...]
    references: tuple[tuple[tuple[str, str], tuple[str, str]], ...]
    builtins: tuple[tuple[str, str], ...]
    others: tuple[Use, ...]
    """Reads that become problems (or need the walk's context)."""
    findings: tuple[Finding, ...]


class UnitScanner:
    """Per-index memo of what each unit needs, and of its syntax where a scan is needed."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._lines: dict[tuple[str, str], list[str]] = {}
        self._trees: dict[UnitKey, ast.Module | None] = {}
        self._findings: dict[UnitKey, tuple[Finding, ...]] = {}
        self._registries: dict[tuple[str, str, str], Registry | None] = {}
        self._by_attr: dict[str, list[tuple[ModuleInfo, ImportBinding]]] | None = None
        self._uses: dict[UnitKey, tuple[Use, ...]] = {}
        self._summaries: dict[UnitKey, Summary] = {}
        self.reach: dict[UnitKey, frozenset[UnitKey]] = {}
        """Per unit: every unit its functions may run (see ``_CallClosure``)."""
        self._positions: dict[tuple[UnitKey, str], tuple[int, int]] = {}

    def summary(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> Summary:
        """The closure effects of including ``unit`` (memoized)."""
        key = (info.source, info.module, unit.index)
        cached = self._summaries.get(key)
        if cached is not None:
            return cached
        deps: dict[tuple[str, str, int], tuple[ModuleInfo, Unit, bool]] = {}
        imports: list[tuple[tuple[str, str], ModuleInfo, ImportBinding]] = []
        references: list[tuple[tuple[str, str], tuple[str, str]]] = []
        builtins: set[tuple[str, str]] = set()
        others: list[Use] = []
        findings = self.findings(info, unit, symbols)
        for use in self.uses(info, unit, symbols):
            found = use.found
            home = found.module
            if found.kind == "definition" and home is not None:
                for dep in found.units:
                    # a load-time read of a name bound only further down the same module
                    # is not an ordering constraint (the original would not run it either)
                    later = home is info and dep.start_line > unit.start_line
                    load = use.load and not later
                    ident = (home.source, home.module, dep.index)
                    if ident not in deps or (load and not deps[ident][2]):
                        deps[ident] = (home, dep, load)
            elif found.kind == "external" and home is not None and found.binding is not None:
                imports.append(((home.module, found.name), home, found.binding))
                if self._native_op(found.target):
                    others.append(use)
            elif found.kind == "builtin":
                builtins.add((info.module, found.name))
                continue
            elif found.kind == "typing":
                continue
            else:
                others.append(use)
                continue
            if use.crosses:
                references.append(((info.module, use.prefix), (home.module, found.name)))
        summary = Summary(
            deps=tuple(deps.values()),
            imports=tuple(imports),
            references=tuple(references),
            builtins=tuple(sorted(builtins)),
            others=tuple(others),
            findings=findings,
        )
        self._summaries[key] = summary
        return summary

    def _native_op(self, target: str) -> bool:
        """``torch.ops.<source package>.op``: an operator a compiled extension registers."""
        parts = target.split(".")
        return (
            len(parts) > 2
            and parts[:2] == ["torch", "ops"]
            and self.index.source_of_module(parts[2]) is not None
        )

    def uses(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> tuple[Use, ...]:
        """Every read of ``unit`` resolved, plus internal imports kept inside its text."""
        key = (info.source, info.module, unit.index)
        cached = self._uses.get(key)
        if cached is not None:
            return cached
        found: list[Use] = []
        for load, chains in ((True, unit.load_reads), (False, unit.call_reads)):
            for chain in chains:
                parts = chain.split(".")
                if parts[0] == "__all__":
                    continue
                resolved = symbols.lookup(
                    info,
                    parts,
                    before=unit.start_line if load else 0,
                    inclusive=unit.kind in _COMPOUND,
                )
                found.append(_make_use(info, chain, parts, resolved, load=load))
        inner = [
            (b, True)
            for b in unit.imports
            if unit.kind in ("if", "try", "with") and not b.type_checking and b.attr != "*"
        ]
        # imports in function bodies run at call time (those in class bodies, rare, at load
        # time: the index does not tell them apart, so they are ordered like calls)
        inner += [(b, False) for b in unit.local_imports]
        for binding, load in inner:
            if self.index.source_of_module(binding.module) is None:
                continue
            resolved = symbols.follow(info, binding, binding.name, ())
            if resolved.kind in ("definition", "external", "missing", "module"):
                use = _make_use(info, binding.name, [binding.name], resolved, load=load)
                found.append(
                    Use(
                        chain=use.chain,
                        root=use.root,
                        prefix=use.prefix,
                        load=load,
                        found=resolved,
                        crosses=False,
                        line=binding.line or unit.start_line,
                    )
                )
        result = tuple(found)
        self._uses[key] = result
        return result

    def tree(self, info: ModuleInfo, unit: Unit) -> ast.Module | None:
        """The unit's statements parsed alone (line numbers relative to its first line)."""
        key = (info.source, info.module, unit.index)
        if key in self._trees:
            return self._trees[key]
        lines = self._lines.get(key[:2])
        if lines is None:
            lines = self._lines[key[:2]] = self.index.text(info).splitlines(keepends=True)
        text = "".join(lines[unit.start_line - 1 : unit.end_line])
        try:
            tree: ast.Module | None = ast.parse(text)
        except SyntaxError:  # a unit sharing a line with another statement (``a = 1; b = 2``)
            tree = None
        self._trees[key] = tree
        return tree

    def position(self, info: ModuleInfo, unit: Unit, name: str) -> tuple[int, int]:
        """Where ``name`` is first read in ``unit`` (its first line if not found)."""
        key = ((info.source, info.module, unit.index), name)
        cached = self._positions.get(key)
        if cached is not None:
            return cached
        where = (unit.start_line, 1)
        tree = self.tree(info, unit) if name else None
        if tree is not None:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id == name:
                    where = (unit.start_line + node.lineno - 1, node.col_offset + 1)
                    break
        self._positions[key] = where
        return where

    def findings(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> tuple[Finding, ...]:
        """Dynamic lookups in ``unit`` that a closure cannot follow (memoized)."""
        key = (info.source, info.module, unit.index)
        cached = self._findings.get(key)
        if cached is not None:
            return cached
        reads = (*unit.load_reads, *unit.call_reads)
        roots = {chain.split(".", 1)[0] for chain in reads}
        found: list[Finding] = []
        registries = {
            root: registry
            for root in sorted(roots)
            if (registry := self._registry(info, unit, root, symbols)) is not None
        }
        if roots & _DYNAMIC_ROOTS or registries:
            tree = self.tree(info, unit)
            if tree is not None:
                found.extend(self._visit(tree, info, unit, symbols, registries))
        result = tuple(found)
        self._findings[key] = result
        return result

    def _visit(
        self,
        tree: ast.Module,
        info: ModuleInfo,
        unit: Unit,
        symbols: Symbols,
        registries: Mapping[str, Registry],
    ) -> Iterator[Finding]:
        reads = set(unit.load_reads) | set(unit.call_reads)

        def at(node: ast.expr, category: Category, message: str) -> Finding:
            return Finding(
                category, message, unit.start_line + node.lineno - 1, node.col_offset + 1
            )

        parents = {
            id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = _dotted(node.func)
                if name == "getattr" and node.args and "getattr" in reads:
                    target = _dotted(node.args[0])
                    if target == "sys.modules[__name__]" or (
                        target in reads
                        and target is not None
                        and symbols.lookup(info, target).kind == "module"
                    ):
                        yield at(
                            node,
                            "dynamic-registry",
                            f"getattr({target}, ...) looks a name up in a source module at "
                            "run time; only the definitions the closure found are inlined",
                        )
                elif (
                    name in ("globals", "vars")
                    and not node.args
                    and name in reads
                    and _reads_namespace(node, parents)
                ):
                    yield at(
                        node,
                        "dynamic-registry",
                        f"{name}() reads the module namespace by string; only the definitions "
                        "the closure found are inlined",
                    )
                elif name in ("importlib.import_module", "import_module", "__import__"):
                    yield from self._dynamic_import(node, info, at)
                elif (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr == "get"
                    and _dotted(node.func.value) in registries
                    and node.args
                    and not isinstance(node.args[0], ast.Constant)
                ):
                    yield _registry_use(
                        at(node, "dynamic-registry", ""), registries, node.func.value
                    )
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and _dotted(node.value) in registries
                and not isinstance(node.slice, ast.Constant)
            ):
                yield _registry_use(at(node, "dynamic-registry", ""), registries, node.value)

    def _dynamic_import(self, node: ast.Call, info: ModuleInfo, at: _At) -> Iterator[Finding]:
        if not node.args:
            return
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if self.index.source_of_module(arg.value) is not None:
                yield at(node, "source-import", f"imports {arg.value!r} of the source by name")
            return
        first = arg.values[0] if isinstance(arg, ast.JoinedStr) and arg.values else arg
        if isinstance(arg, ast.BinOp):
            first = arg.left
        text = first.value if isinstance(first, ast.Constant) else None
        if isinstance(text, str) and (
            text.startswith(".")
            or self.index.source_of_module(text.split(".")[0] or "_") is not None
        ):
            yield at(
                node,
                "dynamic-registry",
                "imports a module of the source chosen at run time; it cannot be inlined",
            )

    def _registry(
        self, info: ModuleInfo, reader: Unit, root: str, symbols: Symbols
    ) -> Registry | None:
        """The registry module-level dict ``root`` is, if a function of its module fills it."""
        found = symbols.lookup(info, root)
        if found.kind != "definition" or found.module is None or len(found.units) != 1:
            return None
        home, unit = found.module, found.units[0]
        key = (home.source, home.module, found.name)
        if key in self._registries:
            registry = self._registries[key]
        else:
            registry = None
            if unit.kind == "assign":
                registry = self._find_registry(home, unit, found.name, symbols)
            self._registries[key] = registry
        if registry is None or (home.module == info.module and registry.writer in reader.binds):
            return None  # a cache filled by the function that reads it
        return registry

    def _find_registry(
        self, home: ModuleInfo, unit: Unit, name: str, symbols: Symbols
    ) -> Registry | None:
        tree = self.tree(home, unit)
        if tree is None or len(tree.body) != 1 or not _is_empty_container(tree.body[0]):
            return None
        for other in home.units:
            if other.kind != "def" or not any(
                c == name or c.startswith(name + ".") for c in other.call_reads
            ):
                continue
            body = self.tree(home, other)
            if body is None or not _writes(body, name) or not other.binds:
                continue
            writer = other.binds[0]
            registrations = tuple(
                u
                for u in home.units
                if u is not other
                and any(c == writer or c.startswith(writer + ".") for c in u.load_reads)
            )
            elsewhere = sorted(
                {
                    module.module
                    for module, binding in self._importers().get(writer, ())
                    if module.module != home.module
                    and symbols.lookup(module, binding.name).key == (home.module, writer)
                }
            )
            return Registry(
                name=name,
                home=home,
                writer=writer,
                registrations=registrations,
                elsewhere=tuple(elsewhere),
            )
        return None

    def _importers(self) -> dict[str, list[tuple[ModuleInfo, ImportBinding]]]:
        """Imported attribute name -> (module, binding) of every ``from x import name``."""
        if self._by_attr is None:
            found: dict[str, list[tuple[ModuleInfo, ImportBinding]]] = {}
            for info in self.index.modules():
                for unit in info.units:
                    for binding in (*unit.imports, *unit.local_imports):
                        if binding.attr and binding.attr != "*":
                            found.setdefault(binding.attr, []).append((info, binding))
            self._by_attr = found
        return self._by_attr


@dataclass(frozen=True, slots=True)
class Registry:
    """A module-level dict filled by a function (``@register``) and looked up by key."""

    name: str
    home: ModuleInfo
    writer: str
    registrations: tuple[Unit, ...]
    """Units of the home module that call the writer at load time (they fill the dict)."""
    elsewhere: tuple[str, ...]
    """Other modules that import the writer: their registrations are not in the closure."""


_At = Callable[[ast.expr, Category, str], Finding]


def _registry_use(where: Finding, registries: Mapping[str, Registry], node: ast.expr) -> Finding:
    registry = registries[_dotted(node) or ""]
    message = (
        f"looks up {registry.name!r} (a registry filled by {registry.writer}()) with a key "
        f"computed at run time; entries registered in {', '.join(registry.elsewhere[:3])}"
        + (
            f" and {len(registry.elsewhere) - 3} more modules"
            if len(registry.elsewhere) > 3
            else ""
        )
        + " are not inlined"
    )
    return Finding(where.category, message, where.line, where.col, registry)


def _make_use(
    info: ModuleInfo, chain: str, parts: list[str], found: Resolution, *, load: bool
) -> Use:
    home = found.module
    crosses = home is not None and (
        home.module != info.module or found.consumed > 1 or found.name != parts[0]
    )
    return Use(
        chain=chain,
        root=parts[0],
        prefix=".".join(parts[: found.consumed]),
        load=load,
        found=found,
        crosses=crosses,
    )


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Subscript):
        inner = _dotted(node.value)
        if inner == "sys.modules" and isinstance(node.slice, ast.Name):
            parts.append(f"sys.modules[{node.slice.id}]")
            return ".".join(reversed(parts))
        return None
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _reads_namespace(call: ast.Call, parents: Mapping[int, ast.AST]) -> bool:
    """``globals()[name]``, ``globals().get(name)``, ``name in globals()``, iteration over it:
    a lookup by string (not a write, not an identity check like ``f_globals is globals()``)."""
    parent = parents.get(id(call))
    if isinstance(parent, ast.Subscript):
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute):
        return parent.attr in _NAMESPACE_READS
    if isinstance(parent, ast.Compare):
        return any(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    return isinstance(parent, (ast.For, ast.comprehension))


def _is_empty_container(statement: ast.stmt) -> bool:
    value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.Call) and _dotted(value.func) in _EMPTY_FACTORIES:
        return not value.keywords and len(value.args) <= (
            1 if _dotted(value.func) in ("defaultdict", "collections.defaultdict") else 0
        )
    return False


def _writes(tree: ast.Module, name: str) -> bool:
    """``name[...] = ...``, ``name.update(...)`` or ``name.setdefault(...)`` inside ``tree``."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Store)
            and _dotted(node.value) == name
        ):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _WRITERS
            and _dotted(node.func.value) == name
        ):
            return True
    return False
