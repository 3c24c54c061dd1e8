"""Guarded modules: what the original imports only under a guard stays guarded in the block file.

A source module the block's code imports only inside ``if``/``try`` (``if
is_gguf_available(): from .quant import utils``, ``try: from .fast import fused except
ImportError: ...``) or inside a function runs its own top-level imports (``import gguf``)
only when that guard lets it, or when that function is called. Flattened into one file, the
module's units are defined unconditionally, so its imports would be too, and the block would
fail at import for a package the original needed only when available.

So emit keeps the guard: a module is *guarded* when no chain of unguarded module-level
imports leads to it from the block's module (:func:`guarded_modules`). The external imports
that only guarded modules make move out of the import section into one ``try`` per guarded
module, which keeps the ``ImportError`` (or ``None``) in a variable (``_guard_pkg_quant``);
each unit of a guarded module that reads one of them at load time (``TYPES = {gguf.Q4_0}``),
or a definition such a unit made, is emitted under ``if _guard_pkg_quant is None:``. Its
functions and classes that only call into the package stay defined: as in the original,
they fail only when called without it. An internal import of the module left in the text
(``try: from .quant import f``, a function's own import) raises the kept error first, as the
original import did (:attr:`Rewrite.raises`). Imports of the standard library stay at the
top. The guarded imports are optional requirements of the file (left out of ``requires``).
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from nnrag.extract.emit_header import format_imports, import_section

if TYPE_CHECKING:
    from nnrag.extract.emit_cache import Entity, IndexCache
    from nnrag.index.build import Index
    from nnrag.index.symbols import Symbols
    from nnrag.model import ImportBinding, ModuleInfo, Unit

__all__ = ["Guards", "guarded_modules", "in_try", "plan_guards", "under_guard"]


@dataclass(slots=True)
class Guards:
    """What emit writes differently for guarded modules."""

    flags: dict[str, str] = field(default_factory=dict)
    """Guarded module -> the variable its ``try`` sets: the ``ImportError``, or ``None``
    (only modules with imports of their own)."""
    imports: dict[str, dict[Entity, ImportBinding]] = field(default_factory=dict)
    """Guarded module -> the external imports only guarded modules make (in its ``try``)."""
    wrapped: dict[int, str] = field(default_factory=dict)
    """``id(unit)`` -> the flag it is emitted under."""
    trying: dict[int, str] = field(default_factory=dict)
    """``id(unit)`` -> the flag of a compound unit that imports a package in its own text
    (``try: import tf_keras as keras`` ``except ImportError: import keras``): emitted in a
    ``try`` that keeps its ``ImportError`` in the flag (:func:`in_try`)."""

    def chunks(self, flat: Mapping[Entity, str]) -> list[str]:
        """One ``try`` per guarded module: its imports, then the flag (``None`` when only
        its compound units import: they set it when they fail)."""
        found: list[str] = []
        for module, flag in sorted(self.flags.items()):
            if module not in self.imports:
                found.append(f"# from {module}: imported only under a guard\n{flag} = None\n")
                continue
            lines = format_imports(self.imports[module], flat).strip("\n").splitlines()
            body = "".join(f"    {line}\n" if line else "\n" for line in lines)
            found.append(
                f"# from {module}: imported only under a guard (if/try) or in a function\n"
                f"try:\n{body}except ImportError as {flag}_error:\n    {flag} = {flag}_error\n"
                f"else:\n    {flag} = None\n"
            )
        return found


def guarded_modules(
    index: Index, symbols: Symbols, block_module: str, modules: Mapping[str, ModuleInfo]
) -> frozenset[str]:
    """The inlined modules that no chain of unguarded module-level imports of inlined
    modules reaches from ``block_module`` (a module no inlined import names counts as
    reached: resolution found it some other way)."""
    edges: dict[str, list[tuple[str, bool]]] = {}
    imported: set[str] = set()
    for info in modules.values():
        for unit in info.units:
            for binding, local in _imports(unit):
                for target in _targets(index, symbols, info, binding):
                    if target in modules and target != info.module:
                        guarded = local or binding.conditional
                        edges.setdefault(info.module, []).append((target, guarded))
                        imported.add(target)
    reached = {block_module} | (set(modules) - imported)
    todo = list(reached)
    while todo:
        for target, guarded in edges.get(todo.pop(), ()):
            if not guarded and target not in reached:
                reached.add(target)
                todo.append(target)
    return frozenset(set(modules) - reached)


def _imports(unit: Unit) -> Iterable[tuple[ImportBinding, bool]]:
    if unit.type_checking:
        return
    for binding in unit.imports:
        if not binding.type_checking:
            yield binding, False
    for binding in unit.local_imports:
        if not binding.type_checking:
            yield binding, True


def _targets(index: Index, symbols: Symbols, info: ModuleInfo, binding: ImportBinding) -> set[str]:
    """The source modules an import binding loads: the module named, and the module that
    defines the imported name (through re-exports)."""
    if index.source_of_module(binding.module) is None:
        return set()
    found = {binding.module}
    if binding.attr is not None and binding.attr != "*":
        home = index.module(binding.module, prefer=info.source)
        if home is not None:
            resolution = symbols.lookup(home, binding.attr)
            if resolution.kind == "definition" and resolution.module is not None:
                found.add(resolution.module.module)
            elif resolution.kind == "module":
                found.add(resolution.target)
    return found


def plan_guards(
    index: Index,
    symbols: Symbols,
    cache: IndexCache,
    *,
    block_module: str,
    units: list[tuple[ModuleInfo, Unit]],
    modules: Mapping[str, ModuleInfo],
    imports: dict[Entity, ImportBinding],
    taken: Iterable[str],
) -> Guards:
    """Decide the guards and take the guarded-only imports out of ``imports`` (they stay
    in ``Guards.imports``, marked conditional)."""
    guards = Guards()
    guarded = guarded_modules(index, symbols, block_module, modules)
    if not guarded:
        return guards
    homes: dict[Entity, set[str]] = {}
    for info in modules.values():
        for unit in info.units:
            for binding, local in _imports(unit):
                # an import inside ``if``/``try`` is written with its unit, under its own
                # condition: it makes no unconditional import of that name
                if local or binding.conditional:
                    continue
                if index.source_of_module(binding.module) is None:
                    homes.setdefault(cache.entity(binding), set()).add(info.module)
    names = set(taken)
    for entity, binding in list(imports.items()):
        users = homes.get(entity)
        if not users or not users <= guarded or import_section(binding.module) == 0:
            continue  # imported on an unguarded path too, or part of Python itself
        del imports[entity]
        for module in sorted(users):
            guards.imports.setdefault(module, {})[entity] = replace(binding, conditional=True)
    importing = {
        id(unit): info.module
        for info, unit in units
        if info.module in guarded and unit.kind != "import" and _imports_package(index, unit)
    }
    failing: dict[Entity, str] = {}
    for module in sorted(set(guards.imports) | set(importing.values())):
        flag = base = "_guard_" + module.replace(".", "_")
        number = 1
        while flag in names or f"{flag}_error" in names:
            number += 1
            flag = f"{base}_{number}"
        names |= {flag, f"{flag}_error"}
        guards.flags[module] = flag
        for entity in guards.imports.get(module, ()):
            failing.setdefault(entity, flag)
    for info, unit in units:
        if info.module not in guarded or unit.kind == "import":
            continue
        wrap = next(
            (
                failing[entity]
                for _, _, entity, at_load in cache.reads(symbols, info, unit)
                if at_load and entity is not None and entity in failing
            ),
            None,
        )
        if wrap is not None:
            guards.wrapped[id(unit)] = wrap
        if id(unit) in importing:
            if wrap is None and info.module in guards.imports:
                guards.wrapped[id(unit)] = guards.flags[info.module]  # runs after them
            guards.trying[id(unit)] = wrap = guards.flags[info.module]
        if wrap is not None:  # after the unit's own reads: they see its imports
            for entity in cache.defined(info, unit):
                failing.setdefault(entity, wrap)
    return guards


def _imports_package(index: Index, unit: Unit) -> bool:
    """Whether ``unit``'s own text imports a package outside the sources and Python."""
    return any(
        not binding.type_checking
        and binding.attr != "*"
        and index.source_of_module(binding.module) is None
        and import_section(binding.module) != 0
        for binding in unit.imports
    )


def under_guard(chunk: str, flag: str) -> str:
    """``chunk`` (a ``# from`` line, then one unit) under ``if flag:``, each line indented
    but the continuation lines of multi-line strings (indenting them would change them)."""
    head, body = _indented(chunk)
    return f"{head}\nif {flag} is None:\n{body}"


def in_try(chunk: str, flag: str) -> str:
    """``chunk`` (a ``# from`` line, then one unit) in a ``try`` whose ``ImportError`` goes
    to ``flag``, as the original's import of the unit's module would have raised it."""
    head, body = _indented(chunk)
    return (
        f"{head}\ntry:\n{body.rstrip(chr(10))}\n"
        f"except ImportError as {flag}_error:\n    {flag} = {flag}_error\n"
    )


def _indented(chunk: str) -> tuple[str, str]:
    """The ``# from`` line of ``chunk`` and its unit indented one level, but the
    continuation lines of multi-line strings (indenting them would change them)."""
    head, _, text = chunk.partition("\n")
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    lines = text.splitlines(keepends=True)
    body = "".join(
        line if number in inside or not line.strip() else "    " + line
        for number, line in enumerate(lines, start=1)
    )
    return head, body
