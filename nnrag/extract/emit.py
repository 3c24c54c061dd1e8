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
import io
import re
import tempfile
import tokenize
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from nnrag.blockfile.header import body_digest
from nnrag.diagnostics import NOQA_COMMENT, diagnostic, suppressed
from nnrag.errors import InternalError
from nnrag.extract.dynimport import (
    DUNDER_SHIM,
    SHIM,
    ByName,
    native_chunk,
    native_namespaces,
    serve_handed_names,
    serve_imports,
    serve_module_doc,
    serve_module_file,
    serve_native_ops,
    served_imports,
    shim_for,
)
from nnrag.extract.effects import unbound_in_source
from nnrag.extract.emit_cache import IndexCache, cache_for
from nnrag.extract.emit_header import (
    external_requirements,
    format_imports,
    provenance_header,
    source_packages,
    source_roots,
)
from nnrag.extract.emit_plan import (
    EmitPlan,
    assign_flat_names,
    augmented_preludes,
    collect_units,
    load_order,
    member_flat,
    plan_rewrites,
)
from nnrag.extract.guards import in_try, plan_guards, under_guard
from nnrag.extract.methods import drop_methods
from nnrag.extract.namespaces import claim_namespaces, place_namespaces
from nnrag.extract.needs import scanner_for
from nnrag.extract.registries import RegistryIndex, registering, registries_for
from nnrag.extract.rewrite import KEEP_NAME, KEEP_NAME_CHUNK, Rewrite
from nnrag.extract.tables import drop_entries
from nnrag.model import (
    Closure,
    Extracted,
    ModuleInfo,
    SourceFile,
    Unit,
)

if TYPE_CHECKING:
    from nnrag.index.build import Index
    from nnrag.index.symbols import Symbols


def emit(index: Index, closure: Closure) -> Extracted:
    """The standalone file for ``closure``: header, imports, units in order, ``__all__``."""
    block = closure.block
    plan = EmitPlan()
    modules = collect_units(index, closure, plan)
    from nnrag.index.symbols import symbols_for

    symbols = symbols_for(index)
    assign_flat_names(index, symbols, closure, plan, modules)
    claim_namespaces(closure, plan.flat, plan.imports)
    plan.units = load_order(
        cache_for(index), symbols, plan.units, set(closure.stand_ins), plan.computed
    )
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
    rewrites = plan_rewrites(index, symbols, closure, plan)
    namespaces = place_namespaces(
        closure,
        plan.flat,
        plan.units,
        lambda m, n: member_flat(index, symbols, plan, m, n),
        plan.guards.wrapped,
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
        native=plan.native,
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
    plan: EmitPlan,
    rewrites: Mapping[int, Rewrite],
    namespaces: Mapping[int, list[tuple[str, str | None]]],
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
    from nnrag.index.symbols import symbols_for

    chunks: list[str] = []
    owners: list[tuple[int, str]] = []  # (chunk, its module): for ``__file__``
    emitted: dict[str, set[int]] = {}
    cache = cache_for(index)
    scanner = scanner_for(index)
    registries = registries_for(index, scanner)
    stand_ins = set(closure.stand_ins)
    unregistered = set(closure.unregistered)
    served: list[ByName] = []
    symbols = symbols_for(index)
    # files with a read of a name the original binds nowhere either
    unbound_files = {p.path for p in closure.problems if p.code == "NNR506"}
    # per module, the last unit that binds names by computed keys: the names are bound after it
    last_computed = {
        info.module: position
        for position, (info, unit) in enumerate(plan.units)
        if unit.binds_computed
    }

    renamed: dict[str, dict[str, str]] = {}  # module -> its names the file spells otherwise
    for entity, name in plan.flat.items():
        if entity[0] == "def" and entity[2] != name:
            renamed.setdefault(entity[1], {})[entity[2]] = name

    def is_source(name: str) -> bool:
        return index.source_of_module(name) is not None

    for position, (info, unit) in enumerate(plan.units):
        if namespaces:  # modules used as objects
            chunks.extend(_guarded(namespaces.get(position - 1, ())))
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
        if info.path in unbound_files:
            chunk = _marked_unbound(chunk, _unbound_reads(symbols, info, unit))
        chunk = _registry_fixed(registries, info, unit, chunk)
        if "__name__" in chunk and info.module in renamed:
            chunk = serve_handed_names(chunk, renamed[info.module])
        if "__doc__" in chunk and not any(
            "__doc__" in u.binds and "__doc__" not in u.rebinds for u in info.units
        ):  # a module that sets its ``__doc__`` as it loads reads the value it set
            chunk = serve_module_doc(chunk, cache.docstring(info))
        tree = functools.partial(scanner.tree, info, unit)
        by_name = served_imports(chunk, tree, is_source)  # the chunk keeps the callee's name
        if by_name:
            chunk = serve_imports(chunk, is_source)
        if (info.source, info.module, unit.index) in stand_ins:
            stand_in = _stand_in(info, unit, plan, unread=closure.unread)
            file = f"{info.source}:{info.path}"
            plan.cut[file] = plan.cut.get(file, 0) + chunk.count("\n") - stand_in.count("\n")
            chunks.append(stand_in)
            continue
        chunk = _without_pruned(closure, plan, info, unit, chunk)
        if (info.source, info.module, unit.index) in unregistered:
            chunk = _without_registering(plan, info, chunk)
        chunk = augmented_preludes(cache, symbols, plan, info, unit, tree=tree) + chunk
        if last_computed.get(info.module) == position and plan.computed.get(info.module):
            chunk = _with_computed(chunk, plan.computed[info.module])
        # not when the calls were in methods left out
        if by_name and (f"{SHIM}(" in chunk or f"{DUNDER_SHIM}(" in chunk):
            served += by_name
        trying = plan.guards.trying.get(id(unit))
        chunk = chunk if trying is None else in_try(chunk, trying)
        flag = plan.guards.wrapped.get(id(unit))
        chunks.append(chunk if flag is None else under_guard(chunk, flag))
        owners.append((len(chunks) - 1, info.module))
        plan.native.update(native_namespaces(chunk, is_source))
    chunks.extend(_guarded(namespaces.get(len(plan.units) - 1, ())))
    if plan.native:
        chunks[:] = _native_served(chunks, owners, plan.native)
    if served:  # before every unit: load-time code may import by name
        sources = {closure.block.source} | {info.source for info, _ in plan.units}
        chunks.insert(0, shim_for(index, sources, plan.flat, served))
    if any(f"@{KEEP_NAME}(" in chunk for chunk in chunks):
        chunks.insert(0, KEEP_NAME_CHUNK)
    return chunks


def _unbound_reads(symbols: Symbols, info: ModuleInfo, unit: Unit) -> frozenset[str]:
    """The names ``unit`` reads in its functions that its module binds nowhere (NNR506)."""
    roots = {chain.partition(".")[0] for chain in unit.call_reads}
    return frozenset(
        root
        for root in roots
        if unbound_in_source(symbols, info, root, symbols.lookup(info, [root]), load=False)
    )


def _marked_unbound(chunk: str, names: frozenset[str]) -> str:
    """``chunk`` with ``# noqa: NNR101`` at the end of each line that reads one of ``names``
    (the original binds them nowhere either: the block keeps the read as written); not on a
    line that ends inside a string or with a backslash, where a comment cannot go."""
    if not names:
        return chunk
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(chunk).readline))
    except (tokenize.TokenError, SyntaxError):
        return chunk
    reading = {t.start[0] for t in tokens if t.type == tokenize.NAME and t.string in names}
    inside = {
        row for t in tokens if t.type == tokenize.STRING for row in range(t.start[0], t.end[0])
    }
    lines = chunk.split("\n")
    for row in sorted(reading - inside):
        line = lines[row - 1]
        if not line.rstrip().endswith("\\") and not suppressed(line, "NNR101"):
            lines[row - 1] = line.rstrip() + NOQA_COMMENT
    return "\n".join(lines)


def _with_computed(chunk: str, names: list[str]) -> str:
    """``chunk``, the last unit of its module that binds module names by computed keys
    (``globals()[name] = ...``), followed by a statement binding each of ``names`` the block
    needs from ``globals()``: the file says where they come from, and an import fails at once
    if no such unit bound one."""
    bound = "\n".join(f'{name} = globals()["{name}"]' for name in names)
    note = "# nnrag: names the statement above binds by computed keys"
    return f"{chunk.rstrip()}\n{note}\n{bound}\n"


def _native_served(chunks: list[str], owners: list[tuple[int, str]], native: set[str]) -> list[str]:
    """``chunks`` reading ``torch.ops.<ns>`` of each namespace in ``native`` through the block
    file's loader, the units of those packages with the installed module's ``__file__``
    (where their compiled extension is), and the loader first (see :mod:`.dynimport`)."""
    from nnrag.blockfile.requirements import distribution_of

    distributions = {name: distribution_of(name) for name in sorted(native)}
    served = [serve_native_ops(chunk, distributions) for chunk in chunks]
    file_read = False
    for position, module in owners:
        if module.split(".", 1)[0] in distributions:
            chunk = served[position]
            served[position] = serve_module_file(chunk, module)
            file_read = file_read or served[position] != chunk
    return [native_chunk(module_file=file_read), *served]


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


def _without_pruned(
    closure: Closure, plan: EmitPlan, info: ModuleInfo, unit: Unit, chunk: str
) -> str:
    """``chunk`` without the methods (or table entries) the closure pruned, counted as cut."""
    dropped = closure.pruned.get((info.source, info.module, unit.index))
    if not dropped:
        return chunk
    cut = drop_entries if unit.kind == "assign" else drop_methods
    shorter = cut(chunk, frozenset(dropped))
    file = f"{info.source}:{info.path}"
    plan.cut[file] = plan.cut.get(file, 0) + chunk.count("\n") - shorter.count("\n")
    return shorter


def _without_registering(plan: EmitPlan, info: ModuleInfo, chunk: str) -> str:
    """``chunk`` (a class or def) without its registering decorators
    (``closure.unregistered``), counted as cut."""
    try:
        tree = ast.parse(chunk)
    except SyntaxError:
        return chunk
    node = tree.body[-1] if tree.body else None
    if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return chunk
    dropped = {
        line
        for decorator in node.decorator_list
        if registering(decorator) is not None
        for line in range(decorator.lineno, (decorator.end_lineno or decorator.lineno) + 1)
    }
    lines = chunk.splitlines(keepends=True)
    shorter = "".join(line for number, line in enumerate(lines, 1) if number not in dropped)
    file = f"{info.source}:{info.path}"
    plan.cut[file] = plan.cut.get(file, 0) + len(dropped)
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


def _stand_in(
    info: ModuleInfo, unit: Unit, plan: EmitPlan, *, unread: tuple[tuple[str, str, int], ...]
) -> str:
    """An empty class named like the class of ``unit``, or a function that raises named like
    the function of ``unit`` (see ``Closure.stand_ins``)."""
    only_imported = (info.source, info.module, unit.index) in unread
    if unit.kind == "def":
        name = unit.binds[0]
        flat = plan.flat.get(("def", info.module, name), name)
        qualified = f"{info.module}.{name}"
        why = (
            "the block only imports it under a guard\n    and never reads it"
            if only_imported
            else "the block only stores it in an attribute\n    it never reads"
        )
        return (
            f"# from {info.module}\ndef {flat}(*args, **kwargs):\n"
            f'    """Stand-in for {qualified}: {why}."""\n'
            f'    raise NotImplementedError("{qualified} is left out of this block file")\n'
        )
    name = unit.classes[0].name
    flat = plan.flat.get(("def", info.module, name), name)
    why = (
        "the block only imports it under a\n    guard and never reads it"
        if only_imported
        else "the block only tests against it"
    )
    return (
        f"# from {info.module}\nclass {flat}:\n"
        f'    """Stand-in for {info.module}.{name}: {why}."""\n'
    )


def _guarded(texts: Iterable[tuple[str, str | None]]) -> list[str]:
    """Each text, under ``if flag is None:`` where it has a guard's flag."""
    return [text if flag is None else under_guard(text, flag) for text, flag in texts]


def _chunk_of(
    cache: IndexCache,
    plan: EmitPlan,
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


def _normal(chunk: str) -> bool:
    """Whether ``chunk`` ends in exactly one newline (as the body joins chunks)."""
    return chunk.endswith("\n") and not chunk.endswith("\n\n")


def _dependencies(plan: EmitPlan, module: str, name: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for info, unit in plan.units:
        for bound in unit.binds:
            if (info.module, bound) != (module, name):
                seen.setdefault(f"{info.module}.{bound}")
    return tuple(seen)


def _file_lines(plan: EmitPlan) -> dict[str, int]:
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
