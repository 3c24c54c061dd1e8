"""Emission: one standalone, deterministic block file from a closure.

Layout of the body (after the provenance header of :mod:`nnrag.blockfile.header`)::

    from __future__ import annotations        # only if every inlined module has it
    <stdlib imports>                          # PEP 8 groups, original import forms,
    <third-party imports>                     # merged, de-duplicated, sorted
    # from <origin module>
    <unit text, verbatim or minimally rewritten>
    ...
    __all__ = ["Target"]

Only units that need it go through LibCST (renames, module-attribute chains, annotation
stringification); all others are copied verbatim, comments and formatting included.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nnrag.blockfile.header import body_digest
from nnrag.diagnostics import diagnostic
from nnrag.errors import ExtractionError, InternalError
from nnrag.extract.dynimport import SHIM, ByName, serve_imports, served_imports, shim_for
from nnrag.extract.emit_cache import Entity, IndexCache, Read, cache_for, import_entity
from nnrag.extract.emit_header import (
    external_requirements,
    format_imports,
    provenance_header,
    source_packages,
    source_roots,
)
from nnrag.extract.guards import Guards, in_try, plan_guards, under_guard
from nnrag.extract.methods import drop_methods
from nnrag.extract.namespaces import claim_namespaces, place_namespaces
from nnrag.extract.needs import scanner_for
from nnrag.extract.registries import RegistryIndex, registries_for
from nnrag.extract.rewrite import Rewrite
from nnrag.extract.tables import drop_entries
from nnrag.model import (
    Closure,
    Diagnostic,
    Extracted,
    ImportBinding,
    ModuleInfo,
    SourceFile,
    Unit,
)

if TYPE_CHECKING:
    from nnrag.index.build import Index
    from nnrag.index.symbols import Symbols


@dataclass(slots=True)
class _Plan:
    """Everything emit decides before writing text."""

    units: list[tuple[ModuleInfo, Unit]] = field(default_factory=list)
    flat: dict[Entity, str] = field(default_factory=dict)
    imports: dict[Entity, ImportBinding] = field(default_factory=dict)
    problems: list[Diagnostic] = field(default_factory=list)
    cut: dict[str, int] = field(default_factory=dict)
    """Per source file (``source:path``): lines of methods left out of plain classes."""
    guards: Guards = field(default_factory=Guards)
    """Modules imported only under a guard: their imports and load-time units stay guarded."""


def emit(index: Index, closure: Closure) -> Extracted:
    """The standalone file for ``closure``: header, imports, units in order, ``__all__``."""
    block = closure.block
    plan = _Plan()
    modules = _collect_units(index, closure, plan)
    from nnrag.index.symbols import symbols_for

    symbols = symbols_for(index)
    _assign_flat_names(index, symbols, closure, plan, modules)
    claim_namespaces(closure, plan.flat, plan.imports)
    plan.units = _load_order(cache_for(index), symbols, plan.units, set(closure.stand_ins))
    plan.guards = plan_guards(
        index,
        symbols,
        cache_for(index),
        block_module=block.module,
        units=plan.units,
        modules=modules,
        imports=plan.imports,
        taken=plan.flat.values(),
    )
    rewrites = _plan_rewrites(index, symbols, closure, plan)
    namespaces = place_namespaces(
        closure, plan.flat, plan.units, lambda m, n: _member_flat(index, symbols, plan, m, n)
    )

    # `from __future__ import annotations` changes what annotations mean (lazy strings
    # instead of evaluated expressions). It is emitted only when every inlined module has
    # it. When modules disagree, the file gets no future import and the units of the
    # modules that had it get their annotations turned into the string literals PEP 563
    # would have stored, so both kinds of unit keep their original semantics.
    lazy = {info.module for info, _ in plan.units if "annotations" in info.future}
    all_lazy = bool(plan.units) and len(lazy) == len(modules)

    chunks: list[str] = []
    future = "from __future__ import annotations\n" if all_lazy else ""
    imports = "\n".join(part for part in (future, format_imports(plan.imports, plan.flat)) if part)
    if imports:
        chunks.append(imports)
    chunks += plan.guards.chunks(plan.flat)
    chunks += _unit_chunks(index, closure, plan, rewrites, namespaces, lazy=lazy, all_lazy=all_lazy)
    chunks.append(f"__all__ = [{block.name!r}]\n".replace("'", '"'))
    body = "\n\n".join(chunk if _normal(chunk) else chunk.rstrip("\n") + "\n" for chunk in chunks)
    digest = body_digest(body)

    requirements = external_requirements(
        [b for b in plan.imports.values() if not b.conditional],
        exclude=source_packages(index, closure, modules),
        roots=source_roots(index, block.source, modules),
    )
    files = sorted(
        {(info.source, info.path, info.sha1) for info in modules.values()},
        key=lambda item: (item[0] != block.source, item[0], item[1]),
    )
    header = provenance_header(
        index=index,
        closure=closure,
        modules=modules,
        files=files,
        requirements=requirements,
        digest=digest,
    )
    code = header + "\n" + body
    # the header is compiled as bytes: only then does Python read a PEP 263 declaration
    _check_compiles(code, block.id, chunks=[header.encode("utf-8"), *chunks])
    dependencies = _dependencies(plan, block.module, block.name)
    return Extracted(
        block=block,
        code=code,
        digest=digest,
        requirements=requirements,
        files=tuple(SourceFile(source=s, path=p, sha1=h) for s, p, h in files),
        problems=tuple(closure.problems) + tuple(plan.problems),
        dependencies=dependencies,
        registrations=closure.registrations,
        file_lines=_file_lines(plan),
    )


def _unit_chunks(
    index: Index,
    closure: Closure,
    plan: _Plan,
    rewrites: Mapping[int, Rewrite],
    namespaces: Mapping[int, list[str]],
    *,
    lazy: set[str],
    all_lazy: bool,
) -> list[str]:
    """The text of each inlined unit in load order, rewritten where its names change.

    Namespace statements go after the unit they follow; a unit sharing its lines with an
    earlier one is emitted once; a unit of a module in ``lazy`` gets string annotations
    unless ``all_lazy`` (then the file has the future import). A registry that imports
    source modules by name to fill itself (``locations=['pkg.models']``) gets
    ``[__name__]`` instead: the block file, already loaded, carries the registrations its
    type strings need (an empty list could send the registry to a fallback import of its
    package). A registry whose class infers a constructor argument from the caller's
    module gets the value its original module gave it (``scope='pkg'``,
    :meth:`RegistryIndex.inferred_scope`). A plain helper class loses the methods the
    closure cannot call (``closure.pruned``).
    """
    chunks: list[str] = []
    emitted: dict[str, set[int]] = {}
    cache = cache_for(index)
    scanner = scanner_for(index)
    registries = registries_for(index, scanner)
    stand_ins = set(closure.stand_ins)
    served: list[ByName] = []

    def is_source(name: str) -> bool:
        return index.source_of_module(name) is not None

    for position, (info, unit) in enumerate(plan.units):
        if namespaces:
            chunks.extend(namespaces.get(position - 1, ()))  # modules used as objects
        if unit.kind == "import":
            continue  # hoisted into the import section above
        if cache.shares_lines(info):
            lines = emitted.setdefault(info.module, set())
            span = set(range(unit.start_line, unit.end_line + 1))
            if span <= lines:
                continue  # several statements on one line: already emitted with the first
            lines |= span
        chunk = _chunk_of(
            cache,
            plan,
            info,
            unit,
            rewrites.get(id(unit)),
            stringify=(info.module in lazy and not all_lazy),
        )
        chunk = _registry_fixed(registries, info, unit, chunk)
        tree = functools.partial(scanner.tree, info, unit)
        by_name = served_imports(chunk, tree, is_source)  # the chunk keeps the callee's name
        if by_name:
            chunk = serve_imports(chunk, is_source)
        if (info.source, info.module, unit.index) in stand_ins:
            stand_in = _stand_in(info, unit, plan)
            file = f"{info.source}:{info.path}"
            plan.cut[file] = plan.cut.get(file, 0) + chunk.count("\n") - stand_in.count("\n")
            chunks.append(stand_in)
            continue
        chunk = _without_pruned(closure, plan, info, unit, chunk)
        if by_name and f"{SHIM}(" in chunk:  # not when the calls were in methods left out
            served += by_name
        trying = plan.guards.trying.get(id(unit))
        chunk = chunk if trying is None else in_try(chunk, trying)
        flag = plan.guards.wrapped.get(id(unit))
        chunks.append(chunk if flag is None else under_guard(chunk, flag))
    chunks.extend(namespaces.get(len(plan.units) - 1, ()))
    if served:  # before every unit: load-time code may import by name
        sources = {closure.block.source} | {info.source for info, _ in plan.units}
        chunks.insert(0, shim_for(index, sources, plan.flat, served))
    return chunks


def _registry_fixed(registries: RegistryIndex, info: ModuleInfo, unit: Unit, chunk: str) -> str:
    """A registry's chunk with ``[__name__]`` for the source modules it imports by name, and
    the scope its class would infer from the caller's module given (see :func:`_unit_chunks`)."""
    if registries.family((info.source, info.module, unit.index)) is not None:
        for located in registries.locations(info, unit):
            chunk = chunk.replace(located, "[__name__]", 1)
    inferred = registries.inferred_scope(info, unit) if unit.kind == "assign" else None
    if inferred is not None:
        chunk = _with_keyword(chunk, *inferred)
    return chunk


def _without_pruned(closure: Closure, plan: _Plan, info: ModuleInfo, unit: Unit, chunk: str) -> str:
    """``chunk`` without the methods (or table entries) the closure pruned, counted as cut."""
    dropped = closure.pruned.get((info.source, info.module, unit.index))
    if not dropped:
        return chunk
    cut = drop_entries if unit.kind == "assign" else drop_methods
    shorter = cut(chunk, frozenset(dropped))
    file = f"{info.source}:{info.path}"
    plan.cut[file] = plan.cut.get(file, 0) + chunk.count("\n") - shorter.count("\n")
    return shorter


def _with_keyword(chunk: str, name: str, value: str) -> str:
    """``chunk`` (one ``X = Call(...)`` statement) with ``name=value`` added to the call."""
    try:
        tree = ast.parse(chunk)
    except SyntaxError:
        return chunk
    stmt = tree.body[0] if len(tree.body) == 1 else None
    call = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
    if not isinstance(call, ast.Call) or call.end_lineno is None or call.end_col_offset is None:
        return chunk
    lines = chunk.splitlines(keepends=True)
    offset = sum(len(line.encode()) for line in lines[: call.end_lineno - 1])
    data = chunk.encode()
    end = offset + call.end_col_offset - 1  # the closing parenthesis
    before = data[:end].rstrip()
    keyword = f"{name}={value!r}".encode()
    if before.endswith(b",") and b"\n" in data[len(before) : end]:  # one argument a line
        line = before[before.rfind(b"\n") + 1 :]
        indent = line[: len(line) - len(line.lstrip())]
        return (before + b"\n" + indent + keyword + b"," + data[len(before) :]).decode()
    separator = b"" if before.endswith(b"(") else b" " if before.endswith(b",") else b", "
    return (before + separator + keyword + data[end:]).decode()


def _stand_in(info: ModuleInfo, unit: Unit, plan: _Plan) -> str:
    """An empty class named like the class of ``unit`` (see ``Closure.stand_ins``)."""
    name = unit.classes[0].name
    flat = plan.flat.get(("def", info.module, name), name)
    return (
        f"# from {info.module}\nclass {flat}:\n"
        f'    """Stand-in for {info.module}.{name}: the block only tests against it."""\n'
    )


def _chunk_of(
    cache: IndexCache,
    plan: _Plan,
    info: ModuleInfo,
    unit: Unit,
    rewrite: Rewrite | None,
    *,
    stringify: bool,
) -> str:
    if not stringify and rewrite is None:
        return cache.chunk(info, unit)  # the same string object in every block
    try:
        return cache.rewritten(info, unit, rewrite or Rewrite(), stringify)
    except (SyntaxError, ValueError) as error:  # keep the text, say so
        plan.problems.append(
            diagnostic("NNR509", path=info.path, line=unit.start_line, col=1, detail=error)
        )
        return cache.chunk(info, unit)


# --------------------------------------------------------------------------- planning


def _collect_units(index: Index, closure: Closure, plan: _Plan) -> dict[str, ModuleInfo]:
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


def _assign_flat_names(
    index: Index,
    symbols: Symbols,
    closure: Closure,
    plan: _Plan,
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


def _plan_rewrites(
    index: Index, symbols: Symbols, closure: Closure, plan: _Plan
) -> dict[int, Rewrite]:
    """For each inlined unit (by ``id``), the names and chains whose spelling changes."""
    defs: dict[str, dict[str, str]] = {}
    for entity, flat in plan.flat.items():
        if entity[0] == "def" and entity[2] != flat:
            defs.setdefault(entity[1], {})[entity[2]] = flat
    rewrites: dict[int, Rewrite] = {}
    cache = cache_for(index)
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
        renamed = defs.get(info.module, empty)
        if load or call or imported or absent or any(name in renamed for name in unit.binds):
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
            )
    return rewrites


def _member_flat(index: Index, symbols: Symbols, plan: _Plan, module: str, name: str) -> str | None:
    """Flat name of ``name`` as bound in ``module``: an inlined definition or a kept import."""
    flat = plan.flat.get(("def", module, name))
    info = index.module(module) if flat is None else None
    if info is not None:
        resolution = symbols.lookup(info, name)
        if resolution.kind == "external" and resolution.binding is not None:
            flat = plan.flat.get(import_entity(resolution.binding))
    return flat


def _load_order(
    cache: IndexCache,
    symbols: Symbols,
    units: list[tuple[ModuleInfo, Unit]],
    stand_ins: set[tuple[str, str, int]],
) -> list[tuple[ModuleInfo, Unit]]:
    """``units`` in closure order, except that a unit never precedes one it reads at load time.

    Resolve already orders by load-time edges; this keeps the emitted file importable even
    if it did not (a stable topological sort; units on a load-time cycle keep their order).
    A stand-in (an empty class, ``Closure.stand_ins``) reads nothing at load time: the bases
    and decorators of the class it replaces are not emitted, so they must not pull units
    ahead of what those units' own calls need (a decorator's helpers).
    """

    def load_defs(info: ModuleInfo, unit: Unit) -> Iterable[tuple[str, str]]:
        if (info.source, info.module, unit.index) in stand_ins:
            return ()
        return cache.load_defs(symbols, info, unit)

    by_name: dict[tuple[str, str], list[int]] = {}
    for n, (info, unit) in enumerate(units):
        for name in unit.binds:
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
    closure: Closure, plan: _Plan, info: ModuleInfo, reads: Iterable[Read]
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


def _normal(chunk: str) -> bool:
    """Whether ``chunk`` ends in exactly one newline (as the body joins chunks)."""
    return chunk.endswith("\n") and not chunk.endswith("\n\n")


def _dependencies(plan: _Plan, module: str, name: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for info, unit in plan.units:
        for bound in unit.binds:
            if (info.module, bound) != (module, name):
                seen.setdefault(f"{info.module}.{bound}")
    return tuple(seen)


def _file_lines(plan: _Plan) -> dict[str, int]:
    """Per source file (``source:path``), the lines of its units the block holds."""
    found: dict[str, int] = {}
    for info, unit in plan.units:
        key = f"{info.source}:{info.path}"
        found[key] = found.get(key, 0) + unit.end_line - unit.start_line + 1
    for key, lines in plan.cut.items():
        found[key] -= lines
    return dict(sorted(found.items()))


@functools.lru_cache(maxsize=8192)
def _compile_error(chunk: str | bytes) -> str | None:
    """Why one top-level chunk of a block file does not compile (``None``: it does)."""
    try:
        compile(chunk, "<nnrag chunk>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        return str(error)
    return None


def _check_compiles(
    code: str, block_id: str, *, chunks: Iterable[str | bytes] | None = None
) -> None:
    """Raise :class:`InternalError` (saving the file) if ``code`` does not compile.

    With ``chunks`` (the top-level pieces the body was joined from, each a complete
    sequence of statements) each piece is compiled on its own, memoized: top-level
    statements compile independently, so this proves the same as compiling the file,
    without recompiling units that many blocks share.
    """
    pieces = [code.encode("utf-8")] if chunks is None else list(chunks)
    problem = next((error for error in map(_compile_error, pieces) if error), None)
    if problem is not None:
        folder = Path(tempfile.gettempdir()) / "nnrag-internal-errors"
        folder.mkdir(parents=True, exist_ok=True)
        evidence = folder / (re.sub(r"[^\w.-]", "_", block_id) + ".py")
        evidence.write_text(code, encoding="utf-8")
        raise InternalError(
            f"the emitted file for {block_id} does not compile: {problem}", evidence=evidence
        )
