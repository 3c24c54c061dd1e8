"""The loaded index: a read-only, in-memory snapshot of every indexed module of every source."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypeVar

from nnrag.errors import SourceError
from nnrag.index.layout import AnalysisCache, Extern, OnDemand
from nnrag.model import DEFAULT_EXTERN, Checkout, Diagnostic, ModuleInfo

__all__ = ["Analyses", "BlobLoader", "Index", "decode_source"]

_T = TypeVar("_T")

BlobLoader = Callable[[str], bytes | None]
"""Looks up a file's bytes by git blob SHA-1 (the store keeps them), ``None`` if unknown."""


def decode_source(data: bytes) -> str:
    """A Python file's text, decoded as ``index.units`` does (PEP 263 cookie or UTF-8, no BOM).

    Line endings are kept as they are in the file.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


class Analyses:
    """What the passes over one index derive from it, built once and kept as long as the index.

    One slot per analysis type (symbols, the unit scanner, registries, the closure memo, the
    emission cache): the module that owns an analysis asks for it here, so no module keeps a
    registry of indexes of its own.
    """

    def __init__(self) -> None:
        self._made: dict[type, object] = {}

    def of(self, kind: type[_T], make: Callable[[], _T]) -> _T:
        """The index's analysis of type ``kind``, made by ``make()`` on first use."""
        found = self._made.get(kind)
        if found is None:
            found = self._made[kind] = make()
        assert isinstance(found, kind)  # one slot per type: only ``make`` fills it
        return found


class Index:
    """Read-only, in-memory view of the indexed modules of every source."""

    def __init__(
        self,
        *,
        checkouts: Mapping[str, Checkout],
        modules: Iterable[ModuleInfo],
        problems: Iterable[Diagnostic] = (),
        blobs: BlobLoader | None = None,
        extern: Iterable[str] = DEFAULT_EXTERN,
        analyses: AnalysisCache | None = None,
    ) -> None:
        self.checkouts: Mapping[str, Checkout] = dict(checkouts)
        self.is_extern = Extern(extern)
        """Whether a dotted module name is kept as an import even where indexed."""
        self.on_demand = OnDemand(self.checkouts, analyses)
        self.analyses = Analyses()
        """Per-index analyses (symbols, scanner, registries, memos), made on first use."""
        self.problems: tuple[Diagnostic, ...] = tuple(
            sorted(problems, key=lambda p: (p.source, p.path, p.line, p.col))
        )
        self._blobs = blobs
        self._order = {
            name: rank
            for rank, name in enumerate(
                sorted(
                    self.checkouts,
                    key=lambda s: (self.checkouts[s].spec.priority, _position(self.checkouts, s)),
                )
            )
        }
        by_source: dict[str, list[ModuleInfo]] = {name: [] for name in self.checkouts}
        for info in modules:
            by_source.setdefault(info.source, []).append(info)
        self._by_source: dict[str, tuple[ModuleInfo, ...]] = {
            name: tuple(sorted(infos, key=lambda m: m.module))
            for name, infos in sorted(by_source.items())
        }
        by_name: dict[str, list[ModuleInfo]] = {}
        owners: dict[str, list[str]] = {}
        packages: dict[str, set[str]] = {}
        for source, infos in self._by_source.items():
            tops = packages.setdefault(source, set())
            for info in infos:
                by_name.setdefault(info.module, []).append(info)
                top = info.module.split(".", 1)[0]
                if top not in tops:
                    tops.add(top)
                    owners.setdefault(top, []).append(source)
        self._by_name = {
            name: tuple(sorted(infos, key=lambda m: self._rank(m.source)))
            for name, infos in by_name.items()
        }
        self._owner = {top: min(sources, key=self._rank) for top, sources in owners.items()}
        self._packages = {name: frozenset(tops) for name, tops in packages.items()}
        self._texts: dict[tuple[str, str], str] = {}
        self._all_tops: dict[str, frozenset[str]] = {}
        self._sources = tuple(sorted(self._by_source, key=self._rank))

    def _rank(self, source: str) -> int:
        return self._order.get(source, len(self._order))

    @property
    def sources(self) -> tuple[str, ...]:
        """Source names, most preferred first (lower ``priority`` number, then config order)."""
        return self._sources

    def modules(self, source: str | None = None) -> Iterator[ModuleInfo]:
        """Every module (of one source), sorted by (source, module)."""
        if source is not None:
            yield from self._by_source.get(source, ())
            return
        for infos in self._by_source.values():
            yield from infos

    def module(self, name: str, *, prefer: str | None = None) -> ModuleInfo | None:
        """The module called ``name``: from source ``prefer`` if it has one, else by priority.

        Modules outside the sources' ``paths`` are indexed on demand (``paths`` scope
        discovery, not resolution); an ``extern`` module is never indexed on demand.
        """
        infos = self._by_name.get(name, ())
        if prefer is not None:
            for info in infos:
                if info.source == prefer:
                    return info
            if prefer in self.checkouts and not self.is_extern(name):
                found = self.on_demand.module(prefer, name)
                if found is not None:
                    return found
        if infos:
            return infos[0]
        if self.is_extern(name):
            return None
        for source in self.sources:
            if source != prefer and name.split(".", 1)[0] in self._tops(source):
                found = self.on_demand.module(source, name)
                if found is not None:
                    return found
        return None

    def modules_outside_paths(
        self, source: str, wanted: Callable[[bytes], bool]
    ) -> Iterator[ModuleInfo]:
        """Modules that ``source``'s ``paths`` leave out, in the top-level packages its
        indexed modules are in or import (not its tests or scripts), whose file passes
        ``wanted`` (a cheap test of its bytes), indexed on demand, in path order: for analyses
        that must see whole packages (where registrations are made), not only where blocks
        are discovered. ``extern`` packages are never read."""
        from nnrag.index.units import module_name_for

        layout = self.on_demand.layouts.get(source)
        if layout is None:
            return
        infos = self._by_source.get(source, ())
        indexed = {info.path for info in infos}
        own = self._tops(source)
        imported = {
            binding.module.split(".", 1)[0]
            for info in infos
            for unit in info.units
            for binding in (*unit.imports, *unit.local_imports)
        }
        for top in sorted(self._packages.get(source, frozenset()) | (imported & own)):
            if self.is_extern(top):
                continue
            for file in layout.files_under(top):
                path = file.relative_to(layout.root).as_posix()
                if path in indexed:
                    continue
                try:
                    data = file.read_bytes()
                except OSError:
                    continue
                if not wanted(data):
                    continue
                name, _ = module_name_for(file, layout.root)
                found = self.module(name, prefer=source)
                if found is not None and found.source == source and found.path == path:
                    yield found

    def in_scope(self, info: ModuleInfo) -> bool:
        """Whether ``info`` lies in its source's ``paths`` (where blocks are discovered)."""
        from nnrag.sources.scan import in_scope

        checkout = self.checkouts.get(info.source)
        return checkout is None or in_scope(info.path, checkout.spec.paths)

    def _tops(self, source: str) -> frozenset[str]:
        """Top-level import names of ``source``: indexed ones and the checkout's layout."""
        found = self._all_tops.get(source)
        if found is None:
            layout = self.on_demand.layouts.get(source)
            found = self._packages.get(source, frozenset()) | frozenset(
                layout.tops if layout is not None else ()
            )
            self._all_tops[source] = found
        return found

    def text(self, info: ModuleInfo) -> str:
        """The text of the file ``info`` was made from (checked against its blob SHA-1)."""
        key = (info.source, info.path)
        cached = self._texts.get(key)
        if cached is not None:
            return cached
        from nnrag.sources.scan import git_blob_sha1

        data: bytes | None = None
        checkout = self.checkouts.get(info.source)
        if checkout is not None:
            try:
                data = (checkout.root / info.path).read_bytes()
            except OSError:
                data = None
            if data is not None and git_blob_sha1(data) != info.sha1:
                data = None
        if data is None and self._blobs is not None:
            data = self._blobs(info.sha1)
        if data is None:
            raise SourceError(
                f"{info.path} changed or disappeared since it was indexed; run `nnrag index` again",
                source=info.source,
                location=str(checkout.root) if checkout else "",
            )
        text = decode_source(data)
        self._texts[key] = text
        return text

    def source_packages(self, source: str) -> frozenset[str]:
        """Top-level import names (packages and modules) the source defines, except ``extern``."""
        return frozenset(top for top in self._tops(source) if not self.is_extern(top))

    def source_of_module(self, name: str) -> str | None:
        """The source that owns ``name``'s top-level package (by priority when several do).

        ``None`` for an ``extern`` module: it is an import, wherever it is indexed.
        """
        if self.is_extern(name):
            return None
        top = name.split(".", 1)[0]
        owner = self._owner.get(top)
        if owner is None:
            owner = next((s for s in self.sources if top in self._tops(s)), None)
        return owner


def _position(checkouts: Mapping[str, Checkout], name: str) -> int:
    for position, key in enumerate(checkouts):
        if key == name:
            return position
    return len(checkouts)
