"""Emission's plan: the units in load order, a flat name for every entity, the kept
imports, and the rewrite of each unit whose names change."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nnrag.errors import ExtractionError
from nnrag.extract.emit_cache import Entity, IndexCache, Read, cache_for, import_entity
from nnrag.extract.guards import Guards
from nnrag.extract.needs import scanner_for
from nnrag.extract.rewrite import Rewrite
from nnrag.model import Closure, Diagnostic, ImportBinding, ModuleInfo, Unit

if TYPE_CHECKING:
    from nnrag.index.build import Index
    from nnrag.index.symbols import Symbols


@dataclass(slots=True)
class EmitPlan:
    """Everything emit decides before writing text."""

    units: list[tuple[ModuleInfo, Unit]] = field(default_factory=list)
    flat: dict[Entity, str] = field(default_factory=dict)
    imports: dict[Entity, ImportBinding] = field(default_factory=dict)
    problems: list[Diagnostic] = field(default_factory=list)
    cut: dict[str, int] = field(default_factory=dict)
    """Per source file (``source:path``): lines of methods left out of plain classes."""
    guards: Guards = field(default_factory=Guards)
    """Modules imported only under a guard: their imports and load-time units stay guarded."""
    computed: dict[str, list[str]] = field(default_factory=dict)
    """Per module, the names the inlined units need that a unit of it binds by a computed
    key (:func:`_computed_names`): the block file binds each from ``globals()`` after it."""
    native: set[str] = field(default_factory=set)
    """Operator namespaces of source packages the units read (``torch.ops.pkg``): the block
    file loads them from the distribution, which it declares (see :mod:`.dynimport`)."""


def collect_units(index: Index, closure: Closure, plan: EmitPlan) -> dict[str, ModuleInfo]:
    modules: dict[str, ModuleInfo] = {}
    cache = cache_for(index)
    for ref in closure.units:
        found = cache.unit(ref.source, ref.module, ref.index)
        if found is None:
            info = index.module(ref.module, prefer=ref.source)
            if info is None or info.source != ref.source:
                raise ExtractionError(
                    f"module {ref.module} of source {ref.source!r} is not in the index; "
                    "run `nnrag index` again",
                    block_id=closure.block.id,
                )
            raise ExtractionError(
                f"unit {ref.index} of {ref.module} is not in the index; run `nnrag index` again",
                block_id=closure.block.id,
            )
        info = found[0]
        if info.module not in modules:
            modules[info.module] = info
        plan.units.append(found)
    return modules


def assign_flat_names(
    index: Index,
    symbols: Symbols,
    closure: Closure,
    plan: EmitPlan,
    modules: Mapping[str, ModuleInfo],
) -> None:
    """Give every bound entity a unique flat name; honour ``closure.renames`` first.

    Priority when two entities want one name: the target class, then builtins read by an
    inlined unit, then kept imports, then definitions in closure order. The loser gets
    ``<name>_2`` (``_3``, ...), unless resolve already chose a name.
    """
    block = closure.block
    claims: dict[str, Entity] = {}

    def claim(entity: Entity, wanted: str) -> None:
        if entity in plan.flat:
            return
        name, number = wanted, 1
        while name in claims and claims[name] != entity:
            number += 1
            name = f"{wanted}_{number}"
        claims[name] = entity
        plan.flat[entity] = name

    claim(("def", block.module, block.name), block.name)
    cache = cache_for(index)
    for entity in _computed_names(cache, symbols, plan):
        claim(entity, entity[2])  # bound by its own name at run time: it cannot be renamed
        plan.computed.setdefault(entity[1], []).append(entity[2])
    for entity in _names_looked_up(index, plan):
        claim(entity, entity[2])  # found by a string that spells it: first come keeps it
    roots = itertools.chain.from_iterable(cache.builtins(symbols, i, u) for i, u in plan.units)
    for root in dict.fromkeys(roots):  # first read first, each once
        claim(("builtin", root), root)

    # Kept imports: closure.imports, plus external bindings of any inlined import unit
    # (conditional imports kept whole inside their try/if unit are not hoisted).
    inside_units = {b for _, unit in plan.units for b in unit.imports if unit.kind != "import"}
    candidates = list(closure.imports)
    for info, unit in plan.units:
        if unit.kind == "import":
            candidates += cache.external_imports(info, unit)
    renamed: dict[str, list[tuple[str, str]]] = {}
    for (module, name), flat in sorted(closure.renames.items()):
        renamed.setdefault(name, []).append((module, flat))
    for binding in sorted(candidates, key=_import_sort_key):
        if binding.module == "__future__":
            continue  # decided once for the whole file, see emit()
        if binding.type_checking or binding in inside_units or binding.attr == "*":
            if binding.attr == "*" and not binding.type_checking:
                plan.imports.setdefault(cache.entity(binding), binding)
            continue
        entity = cache.entity(binding)
        plan.imports.setdefault(entity, binding)
        wanted = binding.name
        form = (binding.module, binding.attr, binding.name)
        for module, flat in renamed.get(binding.name, ()):
            if module in modules and form in cache.import_forms(modules[module]):
                wanted = flat
                break
        claim(entity, wanted)

    flats, renames = plan.flat, closure.renames
    for info, unit in plan.units:
        if unit.kind == "import":
            continue  # its external bindings are hoisted; internal ones are dropped
        same = _kept_imports(cache, info, unit, flats) if unit.imports else None
        for entity in cache.defined(info, unit):
            if entity in flats:
                continue
            if same and entity[2] in same:  # e.g. ``try: import torch.fx`` binds ``torch``
                flats[entity] = same[entity[2]]
                continue
            wanted = renames.get((entity[1], entity[2]), entity[2]) if renames else entity[2]
            if wanted in claims:
                claim(entity, wanted)
            else:  # the common case of claim(), inline
                claims[wanted] = entity
                flats[entity] = wanted


def _computed_names(cache: IndexCache, symbols: Symbols, plan: EmitPlan) -> list[Entity]:
    """The definitions the inlined units read or import that a unit of their module binds
    by a computed key (``globals()[name] = ...`` in a loop): no statement binds them, the
    loop does as the block file runs, under the name it computes."""
    computed = {info.module: info for info, unit in plan.units if unit.binds_computed}
    if not computed:
        return []
    found: dict[Entity, None] = {}
    for info, unit in plan.units:
        targets = [target for _, target in cache.inner_imports(symbols, info, unit)]
        targets += [entity for _, _, entity, _ in cache.reads(symbols, info, unit)]
        for entity in targets:
            if entity is None or entity[0] != "def" or entity[1] not in computed:
                continue
            if entity[2] not in symbols.binders(computed[entity[1]]):
                found[entity] = None
    return list(found)


def _names_looked_up(index: Index, plan: EmitPlan) -> list[Entity]:
    """The definitions of the inlined units' modules that a unit looks up by a string
    (:meth:`~nnrag.extract.needs.UnitScanner.namespace_names`): renamed, the string would
    find another definition or none."""
    scanner = scanner_for(index)
    defined = {(info.module, name) for info, unit in plan.units for name in unit.binds}
    found: dict[Entity, None] = {}
    for info, unit in plan.units:
        for name, _ in scanner.namespace_names(info, unit):
            if (info.module, name) in defined:
                found[("def", info.module, name)] = None
    return list(found)


def _kept_imports(
    cache: IndexCache, info: ModuleInfo, unit: Unit, flats: Mapping[Entity, str]
) -> dict[str, str]:
    """Names ``unit`` (kept whole: ``try``/``if``) binds by importing an external object a
    kept import binds too -> that import's flat name: one object, so one flat name (reads
    of the name after the unit denote the unit's binding, and must not get a second,
    never-bound name)."""
    return {
        binding.name: flats[entity]
        for binding in cache.external_imports(info, unit)
        if not binding.type_checking
        and binding.attr != "*"
        and (entity := cache.entity(binding)) in flats
    }


def _import_sort_key(binding: ImportBinding) -> tuple[str, str, str, int]:
    return (binding.module, binding.attr or "", binding.name, binding.line)


def plan_rewrites(
    index: Index, symbols: Symbols, closure: Closure, plan: EmitPlan
) -> dict[int, Rewrite]:
    """For each inlined unit (by ``id``), the names and chains whose spelling changes."""
    defs: dict[str, dict[str, str]] = {}
    for entity, flat in plan.flat.items():
        if entity[0] == "def" and entity[2] != flat:
            defs.setdefault(entity[1], {})[entity[2]] = flat
    rewrites: dict[int, Rewrite] = {}
    cache = cache_for(index)
    scanner = scanner_for(index)
    empty: dict[str, str] = {}
    # entities whose flat name is not the name they are read by where they are defined
    respelled = {entity for entity, flat in plan.flat.items() if entity[-1] != flat}
    references = set(closure.references)
    for info, unit in plan.units:
        crossing, plain, prefixes = cache.read_kinds(symbols, info, unit)
        if plain.isdisjoint(respelled) and prefixes.isdisjoint(references):
            # only chains spelled otherwise than their flat name can change (same result)
            load, call = _crossing_maps(plan.flat, crossing) if crossing else ({}, {})
        else:
            load, call = _chain_maps(closure, plan, info, cache.reads(symbols, info, unit))
        imported: dict[tuple[str, str], str] = {}
        raises: dict[str, str] = {}
        for inner, target in cache.inner_imports(symbols, info, unit):
            named = None if target is None else plan.flat.get(target)
            if named is not None and target is not None:
                imported[inner] = named
                guard = plan.guards.flags.get(target[1]) if target[0] == "def" else None
                if guard is not None:
                    raises[named] = guard
        absent = dict(cache.absent_imports(symbols, info, unit))
        moved = dict(cache.moved_imports(symbols, info, unit))
        dead = frozenset(
            (line - unit.start_line + 1, name)
            for line, name in scanner.dead_imports(info, unit, symbols)
        )
        renamed = defs.get(info.module, empty)
        changed = load or call or imported or absent or moved or dead
        if changed or any(name in renamed for name in unit.binds):
            if renamed:
                # a name absent from the text cannot be renamed in it: leaving it out changes
                # nothing but lets blocks that rename other names of the module share it
                renamed = {
                    name: flat for name, flat in renamed.items() if cache.mentions(info, unit, name)
                }
            package = info.module if info.is_package else info.module.rpartition(".")[0]
            rewrites[id(unit)] = Rewrite(
                load=load,
                call=call,
                defs=renamed,
                imported=imported,
                package=package,
                raises=raises,
                absent=absent,
                moved=moved,
                dead=dead,
            )
    return rewrites


def augmented_preludes(
    cache: IndexCache,
    symbols: Symbols,
    plan: EmitPlan,
    info: ModuleInfo,
    unit: Unit,
    *,
    tree: Callable[[], ast.Module | None],
) -> str:
    """``<flat> = <previous binding's flat>`` lines for a module-level ``NAME op= value`` of
    ``unit`` (``tree()`` parses it) whose ``NAME`` was bound before by another definition,
    under another flat name (``from .a import DOC`` then ``DOC += "..."``): one ``Name`` node
    is both the read and the binding, so renaming the binding alone would read a name never
    bound. Only a unit that reads at load time a name it binds is parsed for it."""
    if set(unit.binds).isdisjoint(unit.load_reads):
        return ""
    parsed = tree()
    if parsed is None:
        return ""
    targets = {
        node.target.id
        for node in parsed.body
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
    }
    lines: list[str] = []
    for chain, _, entity, at_load in cache.reads(symbols, info, unit):
        if not at_load or chain not in targets or entity is None:
            continue
        own = plan.flat.get(("def", info.module, chain))
        previous = plan.flat.get(entity)
        if own is not None and previous is not None and own != previous:
            lines.append(f"{own} = {previous}\n")
            targets.discard(chain)
    return "".join(lines)


def member_flat(
    index: Index, symbols: Symbols, plan: EmitPlan, module: str, name: str
) -> str | None:
    """Flat name of ``name`` as bound in ``module``: an inlined definition or a kept import."""
    flat = plan.flat.get(("def", module, name))
    info = index.module(module) if flat is None else None
    if info is not None:
        resolution = symbols.lookup(info, name)
        if resolution.kind == "external" and resolution.binding is not None:
            flat = plan.flat.get(import_entity(resolution.binding))
    return flat


def load_order(
    cache: IndexCache,
    symbols: Symbols,
    units: list[tuple[ModuleInfo, Unit]],
    stand_ins: set[tuple[str, str, int]],
    computed: Mapping[str, list[str]] | None = None,
) -> list[tuple[ModuleInfo, Unit]]:
    """``units`` in closure order, except that a unit never precedes one it reads at load time
    (``computed``: the names a unit binds by computed keys, per module, :attr:`EmitPlan.computed`).

    Resolve already orders by load-time edges; this keeps the emitted file importable even
    if it did not (a stable topological sort; units on a load-time cycle keep their order).
    A stand-in (an empty class, ``Closure.stand_ins``) reads nothing at load time: the bases
    and decorators of the class it replaces are not emitted, so they must not pull units
    ahead of what those units' own calls need (a decorator's helpers).
    """

    def load_defs(info: ModuleInfo, unit: Unit) -> Iterable[tuple[str, str]]:
        if (info.source, info.module, unit.index) in stand_ins:
            return ()
        found = cache.load_defs(symbols, info, unit)
        if computed and unit.kind in ("if", "try", "with"):  # its imports run at load time
            found += tuple(
                (target[1], target[2])
                for _, target in cache.inner_imports(symbols, info, unit)
                if target is not None and target[2] in computed.get(target[1], ())
            )
        return found

    by_name: dict[tuple[str, str], list[int]] = {}
    for n, (info, unit) in enumerate(units):
        names = unit.binds
        if computed and unit.binds_computed:
            names = (*names, *computed.get(info.module, ()))
        for name in names:
            by_name.setdefault((info.module, name), []).append(n)
    later = any(
        m > n
        for n, (info, unit) in enumerate(units)
        for defined in load_defs(info, unit)
        for m in by_name.get(defined, ())
    )
    if not later:
        return units
    needs: list[set[int]] = []
    for n, (info, unit) in enumerate(units):
        found: set[int] = set()
        for defined in load_defs(info, unit):
            found.update(m for m in by_name.get(defined, ()) if m != n)
        needs.append(found)
    # A unit that reads a later one waits for it (the units in between keep their place):
    # pulling the later unit ahead instead would pull it ahead of what its functions call
    # when it runs, which resolve ordered before it. Units left waiting (a load-time cycle)
    # come last, in closure order.
    order: list[int] = []
    placed: set[int] = set()
    waiting: dict[int, list[int]] = {}
    missing = [set(found) for found in needs]

    def wait_or_place(n: int) -> None:
        todo = [n]
        while todo:
            ready = todo.pop(0)
            missing[ready] -= placed
            if missing[ready]:
                waiting.setdefault(min(missing[ready]), []).append(ready)
                continue
            placed.add(ready)
            order.append(ready)
            todo += sorted(waiting.pop(ready, []))

    for n in range(len(units)):
        wait_or_place(n)
    order += [n for n in range(len(units)) if n not in placed]
    return [units[n] for n in order]


def _chain_maps(
    closure: Closure, plan: EmitPlan, info: ModuleInfo, reads: Iterable[Read]
) -> tuple[dict[str, str], dict[str, str]]:
    """(load-time, call-time): chain prefix as written -> flat name, where they differ."""
    load: dict[str, str] = {}
    call: dict[str, str] = {}
    for chain, resolved, entity, at_load in reads:
        prefix = resolved
        flat = None if entity is None else plan.flat.get(entity)
        if flat is None:  # resolve may know better (it filled references)
            parts = chain.split(".")
            for size in range(len(parts), 0, -1):
                target = closure.references.get((info.module, ".".join(parts[:size])))
                flat = None if target is None else plan.flat.get(("def", *target))
                if flat is not None:
                    prefix = ".".join(parts[:size])
                    break
        if flat is not None and flat != prefix:
            (load if at_load else call)[prefix] = flat
    return load, call


def _crossing_maps(
    flat: Mapping[Entity, str], crossing: Iterable[Read]
) -> tuple[dict[str, str], dict[str, str]]:
    """:func:`_chain_maps` of reads that all denote an entity, when no prefix of theirs is
    in ``closure.references`` (its fallback would find nothing)."""
    load: dict[str, str] = {}
    call: dict[str, str] = {}
    for _, prefix, entity, at_load in crossing:
        named = flat.get(entity) if entity is not None else None
        if named is not None and named != prefix:
            (load if at_load else call)[prefix] = named
    return load, call
