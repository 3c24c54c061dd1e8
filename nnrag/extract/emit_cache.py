"""Per-index memos of emission: what emit derives from one unit once, for every block."""

from __future__ import annotations

import ast
import builtins
import functools
import itertools
from typing import TYPE_CHECKING

from nnrag.extract.namespaces import namespace_entity
from nnrag.extract.rewrite import Rewrite, rewrite_unit
from nnrag.model import ImportBinding, ModuleInfo, Unit

if TYPE_CHECKING:
    from nnrag.index.build import Index
    from nnrag.index.symbols import Symbols

__all__ = ["Entity", "IndexCache", "Read", "cache_for", "import_entity"]

_BUILTINS = frozenset(dir(builtins))

Entity = tuple[str, ...]
"""What a flat name denotes: ``("def", module, name)``, ``("import", module, attr, local)``,
``("builtin", name)``."""


def import_entity(binding: ImportBinding) -> Entity:
    """Imports binding the same object under the same name are one entity, whatever the form
    (``import torch.nn as nn`` and ``from torch import nn``)."""
    if binding.attr is None:
        top = binding.module.split(".", 1)[0]
        target = top if binding.name == top else binding.module
    else:
        target = f"{binding.module}.{binding.attr}"
    return ("import", target, binding.name)


class IndexCache:
    """What emit derives from one index and reuses across blocks (lives as long as it)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._forms: dict[tuple[str, str], frozenset[tuple[str, str | None, str]]] = {}
        self._lines: dict[tuple[str, str], list[str]] = {}
        self._reads: dict[tuple[str, str, int], tuple[Read, ...]] = {}
        self._units: dict[tuple[str, str, int], tuple[ModuleInfo, Unit]] = {}
        self._chunks: dict[tuple[str, str, int], str] = {}
        self._shared: dict[tuple[str, str], bool] = {}
        self._docstrings: dict[tuple[str, str], str | None] = {}
        self._builtins: dict[tuple[str, str, int], tuple[str, ...]] = {}
        self._inner: dict[tuple[str, str, int], tuple[tuple[tuple[str, str], Entity | None], ...]]
        self._inner = {}
        self._kinds: dict[
            tuple[str, str, int],
            tuple[tuple[Read, ...], frozenset[Entity], frozenset[tuple[str, str]]],
        ] = {}
        self._load_defs: dict[tuple[str, str, int], tuple[tuple[str, str], ...]] = {}
        self._defined: dict[tuple[str, str, int], tuple[Entity, ...]] = {}
        self._mentions: dict[tuple[str, str, int, str], bool] = {}
        self._entities: dict[int, tuple[ImportBinding, Entity]] = {}
        self._rewritten: dict[tuple[str, str, int], tuple[Rewrite, bool, str | Exception]] = {}
        self._external: dict[tuple[str, str, int], tuple[ImportBinding, ...]] = {}
        self._absent: dict[tuple[str, str, int], tuple[tuple[tuple[str, str], str], ...]] = {}
        self._moved: dict[tuple[str, str, int], tuple[tuple[tuple[str, str], str], ...]] = {}

    def import_forms(self, info: ModuleInfo) -> frozenset[tuple[str, str | None, str]]:
        """``(module, attr, name)`` of every import written in ``info``."""
        key = (info.source, info.module)
        if key not in self._forms:
            self._forms[key] = frozenset(
                (b.module, b.attr, b.name) for unit in info.units for b in unit.imports
            )
        return self._forms[key]

    def lines(self, info: ModuleInfo) -> list[str]:
        key = (info.source, info.module)
        if key not in self._lines:
            self._lines[key] = self.index.text(info).split("\n")
        return self._lines[key]

    def builtins(self, symbols: Symbols, info: ModuleInfo, unit: Unit) -> tuple[str, ...]:
        """Builtins ``unit`` reads (roots its module does not bind), first read first."""
        key = (info.source, info.module, unit.index)
        found = self._builtins.get(key)
        if found is None:
            bound = symbols.binders(info)
            roots = (chain.split(".", 1)[0] for chain in (*unit.load_reads, *unit.call_reads))
            found = tuple(dict.fromkeys(r for r in roots if r in _BUILTINS and r not in bound))
            self._builtins[key] = found
        return found

    def read_kinds(
        self, symbols: Symbols, info: ModuleInfo, unit: Unit
    ) -> tuple[tuple[Read, ...], frozenset[Entity], frozenset[tuple[str, str]]]:
        """:meth:`reads` split for :func:`_plan_rewrites`: the reads spelled otherwise than
        the name of what they denote (``layers.Mlp``, an alias), the entities read by their
        own name, and every (module, chain prefix) ``closure.references`` could map."""
        key = (info.source, info.module, unit.index)
        found = self._kinds.get(key)
        if found is None:
            reads = self.reads(symbols, info, unit)
            crossing = tuple(r for r in reads if r[2] is not None and r[1] != r[2][-1])
            plain = frozenset(r[2] for r in reads if r[2] is not None and r[1] == r[2][-1])
            prefixes = frozenset(
                (info.module, ".".join(parts[:size]))
                for parts in (r[0].split(".") for r in reads)
                for size in range(1, len(parts) + 1)
            )
            found = self._kinds[key] = (crossing, plain, prefixes)
        return found

    def load_defs(
        self, symbols: Symbols, info: ModuleInfo, unit: Unit
    ) -> tuple[tuple[str, str], ...]:
        """(module, name) of every definition ``unit`` reads at load time."""
        key = (info.source, info.module, unit.index)
        found = self._load_defs.get(key)
        if found is None:
            found = tuple(
                (entity[1], entity[2])
                for _, _, entity, at_load in self.reads(symbols, info, unit)
                if at_load and entity is not None and entity[0] == "def"
            )
            self._load_defs[key] = found
        return found

    def mentions(self, info: ModuleInfo, unit: Unit, name: str) -> bool:
        """Whether ``name`` occurs in the text of ``unit``."""
        key = (info.source, info.module, unit.index, name)
        found = self._mentions.get(key)
        if found is None:
            found = self._mentions[key] = name in self.chunk(info, unit)
        return found

    def entity(self, binding: ImportBinding) -> Entity:
        """:func:`import_entity`, memoized by binding (the index holds every binding)."""
        found = self._entities.get(id(binding))
        if found is None or found[0] is not binding:
            found = self._entities[id(binding)] = (binding, import_entity(binding))
        return found[1]

    def defined(self, info: ModuleInfo, unit: Unit) -> tuple[Entity, ...]:
        """``("def", module, name)`` of every name ``unit`` binds."""
        key = (info.source, info.module, unit.index)
        found = self._defined.get(key)
        if found is None:
            found = self._defined[key] = tuple(("def", info.module, n) for n in unit.binds)
        return found

    def external_imports(self, info: ModuleInfo, unit: Unit) -> tuple[ImportBinding, ...]:
        """The bindings of ``unit`` that import from outside every indexed source."""
        key = (info.source, info.module, unit.index)
        found = self._external.get(key)
        if found is None:
            found = tuple(b for b in unit.imports if self.index.source_of_module(b.module) is None)
            self._external[key] = found
        return found

    def inner_imports(
        self, symbols: Symbols, info: ModuleInfo, unit: Unit
    ) -> tuple[tuple[tuple[str, str], Entity | None], ...]:
        """:func:`_inner_imports`, memoized."""
        key = (info.source, info.module, unit.index)
        found = self._inner.get(key)
        if found is None:
            found = self._inner[key] = _inner_imports(self.index, symbols, info, unit)
        return found

    def absent_imports(
        self, symbols: Symbols, info: ModuleInfo, unit: Unit
    ) -> tuple[tuple[tuple[str, str], str], ...]:
        """The internal imports inside the unit that raise in the original (the key
        :class:`Rewrite` ``absent`` uses for each, and the exception), memoized."""
        key = (info.source, info.module, unit.index)
        found = self._absent.get(key)
        if found is None:
            inner = [*unit.local_imports, *(unit.imports if unit.kind == "try" else ())]
            found = self._absent[key] = tuple(
                (_import_key(binding), error)
                for binding in inner
                if symbols.absent_import(info, unit, binding)
                and (error := symbols.absent_error(info, binding)) is not None
            )
        return found

    def moved_imports(
        self, symbols: Symbols, info: ModuleInfo, unit: Unit
    ) -> tuple[tuple[tuple[str, str], str], ...]:
        """The internal ``from m import x`` inside the unit's functions of a name ``m`` hands
        out through its ``__getattr__`` from a module outside the sources
        (:meth:`~nnrag.index.symbols.Symbols.lazy_export`): the key :class:`Rewrite` ``moved``
        uses for each, and the ``from <module> import <name>`` it becomes, memoized."""
        key = (info.source, info.module, unit.index)
        found = self._moved.get(key)
        if found is None:
            moved: list[tuple[tuple[str, str], str]] = []
            for binding in unit.local_imports:
                if binding.attr in (None, "*") or binding.type_checking:
                    continue
                if self.index.source_of_module(binding.module) is None:
                    continue
                target = self.index.module(binding.module, prefer=info.source)
                lazy = symbols.lazy_export(target, binding.attr or "") if target else None
                if lazy is not None and self.index.source_of_module(lazy.module) is None:
                    statement = f"from {lazy.module} import {lazy.attr}"
                    moved.append(((binding.module, binding.attr or ""), statement))
            found = self._moved[key] = tuple(moved)
        return found

    def unit(self, source: str, module: str, number: int) -> tuple[ModuleInfo, Unit] | None:
        """Unit ``number`` of ``module`` in ``source`` (``None``: not in the index)."""
        key = (source, module, number)
        found = self._units.get(key)
        if found is None:
            info = self.index.module(module, prefer=source)
            if info is None or info.source != source:
                return None
            unit = next((u for u in info.units if u.index == number), None)
            if unit is None:
                return None
            found = self._units[key] = (info, unit)
        return found

    def chunk(self, info: ModuleInfo, unit: Unit) -> str:
        """The verbatim chunk of ``unit`` (see :func:`_chunk`), one string per unit."""
        key = (info.source, info.module, unit.index)
        found = self._chunks.get(key)
        if found is None:
            found = self._chunks[key] = _chunk(info.module, _unit_text(self.lines(info), unit))
        return found

    def rewritten(self, info: ModuleInfo, unit: Unit, rewrite: Rewrite, stringify: bool) -> str:
        """The chunk of ``unit`` rewritten; raises what :func:`rewrite_unit` raises.

        The last rewrite of each unit is kept: consecutive blocks mostly ask for the same.
        """
        key = (info.source, info.module, unit.index)
        last = self._rewritten.get(key)
        if last is not None and last[1] == stringify and last[0] == rewrite:
            if isinstance(last[2], Exception):
                raise last[2]
            return last[2]
        text = _unit_text(self.lines(info), unit)
        try:
            found = _chunk(info.module, _rewrite_cached(text, _rewrite_key(rewrite), stringify))
        except (SyntaxError, ValueError) as error:
            self._rewritten[key] = (rewrite, stringify, error)
            raise
        self._rewritten[key] = (rewrite, stringify, found)
        return found

    def shares_lines(self, info: ModuleInfo) -> bool:
        """Whether two units of ``info`` share a line (``a = 1; b = 2``)."""
        key = (info.source, info.module)
        found = self._shared.get(key)
        if found is None:
            spans = sorted((u.start_line, u.end_line) for u in info.units)
            found = any(a[1] >= b[0] for a, b in itertools.pairwise(spans))
            self._shared[key] = found
        return found

    def docstring(self, info: ModuleInfo) -> str | None:
        """The docstring of module ``info`` as written (``None``: it has none)."""
        key = (info.source, info.module)
        if key not in self._docstrings:
            try:
                tree = ast.parse(self.index.text(info))
            except SyntaxError:
                tree = None
            self._docstrings[key] = None if tree is None else ast.get_docstring(tree, clean=False)
        return self._docstrings[key]

    def reads(self, symbols: Symbols, info: ModuleInfo, unit: Unit) -> tuple[Read, ...]:
        """What each chain ``unit`` reads denotes: ``(prefix, entity, is_load)``, resolved
        with Python's rules (a load-time read sees only bindings made before the unit)."""
        key = (info.source, info.module, unit.index)
        found = self._reads.get(key)
        if found is None:
            items: list[Read] = []
            for chains, before in ((unit.load_reads, unit.start_line), (unit.call_reads, 0)):
                for chain in chains:
                    parts = chain.split(".")
                    resolution = symbols.lookup(info, parts, before=before)
                    entity: Entity | None = None
                    if resolution.kind == "definition" and resolution.module is not None:
                        entity = ("def", resolution.module.module, resolution.name)
                    elif resolution.kind == "external" and resolution.binding is not None:
                        entity = import_entity(resolution.binding)
                    prefix = ".".join(parts[: resolution.consumed])
                    items.append((chain, prefix, entity, bool(before)))
            found = self._reads[key] = tuple(items)
        return found


Read = tuple[str, str, "Entity | None", bool]
"""(chain as read, prefix that denotes something, what it denotes, read at load time)."""


def cache_for(index: Index) -> IndexCache:
    return index.analyses.of(IndexCache, lambda: IndexCache(index))


def _inner_imports(
    index: Index, symbols: Symbols, info: ModuleInfo, unit: Unit
) -> tuple[tuple[tuple[str, str], Entity | None], ...]:
    """Internal imports inside the unit's text: the key :class:`Rewrite` ``imported`` uses
    for each, and the entity whose flat name it binds (``None``: none).

    ``from m import x`` -> ``(m, x)`` and what ``x`` is; ``import a.b as m`` of an internal
    module used as an object -> ``("import a.b", m)`` and the module's namespace.
    """
    inner = [*unit.local_imports, *(unit.imports if unit.kind != "import" else ())]
    found: list[tuple[tuple[str, str], Entity | None]] = []
    for binding in inner:
        attr = binding.attr
        if attr is None and index.source_of_module(binding.module) is not None:
            module = symbols.follow(info, binding, binding.name, ())
            space = namespace_entity(module.target) if module.kind == "module" else None
            found.append(((f"import {binding.module}", binding.name), space))
            continue
        if attr is None or attr == "*" or index.source_of_module(binding.module) is None:
            continue
        target = index.module(binding.module, prefer=info.source)
        if target is None:
            continue
        resolution = symbols.lookup(target, attr)
        entity: Entity | None = None
        if resolution.kind == "definition" and resolution.module is not None:
            entity = ("def", resolution.module.module, resolution.name)
        elif resolution.kind == "external" and resolution.binding is not None:
            entity = import_entity(resolution.binding)
        elif resolution.kind == "module":
            entity = namespace_entity(resolution.target)
        found.append(((binding.module, attr), entity))
    return tuple(found)


def _import_key(binding: ImportBinding) -> tuple[str, str]:
    """The key of an import inside a unit's text, as :class:`Rewrite` maps use it."""
    if binding.attr is None:
        return (f"import {binding.module}", binding.name)
    return (binding.module, binding.attr)


def _unit_text(lines: list[str], unit: Unit) -> str:
    return "\n".join(lines[unit.start_line - 1 : unit.end_line])


def _chunk(module: str, text: str) -> str:
    """A unit's text as it goes into the body: its origin comment, one final newline."""
    return f"# from {module}\n{text}".rstrip("\n") + "\n"


_RewriteKey = tuple[tuple[tuple[str, str], ...], ...]


def _rewrite_key(rewrite: Rewrite) -> tuple[_RewriteKey, str]:
    imported = tuple((f"{m}\0{n}", flat) for (m, n), flat in sorted(rewrite.imported.items()))
    maps = (rewrite.load, rewrite.call, rewrite.defs)
    raises = tuple(sorted(rewrite.raises.items()))
    absent = tuple((f"{m}\0{n}", error) for (m, n), error in sorted(rewrite.absent.items()))
    moved = tuple((f"{m}\0{n}", text) for (m, n), text in sorted(rewrite.moved.items()))
    dead = tuple((str(line), name) for line, name in sorted(rewrite.dead))
    keyed = (*(tuple(sorted(m.items())) for m in maps), imported, raises, absent, moved, dead)
    return keyed, rewrite.package


@functools.lru_cache(maxsize=4096)
def _rewrite_cached(text: str, key: tuple[_RewriteKey, str], stringify: bool) -> str:
    """:func:`rewrite_unit`, memoized: many blocks share the same rewritten unit."""
    (load, call, defs, imported, raises, absent, moved, dead), package = key
    rewrite = Rewrite(
        raises=dict(raises),
        absent={tuple(k.split("\0", 1)): v for k, v in absent},  # type: ignore[misc]  # as imported
        moved={tuple(k.split("\0", 1)): v for k, v in moved},  # type: ignore[misc]  # as imported
        load=dict(load),
        call=dict(call),
        defs=dict(defs),
        imported={tuple(k.split("\0", 1)): v for k, v in imported},  # type: ignore[misc]  # the split always gives 2 parts (the key was joined from 2)
        package=package,
        dead=frozenset((int(line), name) for line, name in dead),
    )
    return rewrite_unit(text, rewrite, stringify_annotations=stringify)
