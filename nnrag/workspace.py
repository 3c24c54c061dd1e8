"""The facade the CLI, the plugin and the hook call: settings in, blocks and results out."""

from __future__ import annotations

import gc
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nnrag.index.build import Index
    from nnrag.model import (
        BlockHints,
        BlockRef,
        Extracted,
        IndexStats,
        Replay,
        Settings,
        Stage,
        ValidationResult,
    )
    from nnrag.plugins import Plugins
    from nnrag.validate.results import ResultCache
    from nnrag.validate.sandbox import Sandbox


FULL_COLLECTION_EVERY = 100
"""Young collections between two full ones of the cyclic garbage collector, at least, in a
process that runs a workspace (:func:`collect_rarely`)."""


def collect_rarely() -> None:
    """Let the cyclic garbage collector run a full collection at most every
    :data:`FULL_COLLECTION_EVERY` young ones (CPython's default: 10); call it once in a
    process that runs a workspace (the CLI, each pytest worker).

    Such a process holds a large heap for its whole life (the index, its analyses, the
    extractions) that grows as blocks go by; each full collection traverses all of it, and
    with the default ones that happened to start in an ``ast.parse`` made that parse last
    seconds. Young garbage is collected as before; cyclic garbage that reached the oldest
    generation waits longer (at most that many young collections' worth of survivors).
    """
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, max(full, FULL_COLLECTION_EVERY))


class Workspace:
    """Settings plus the cache they point at. Cheap to create; work happens on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._index: Index | None = None
        self._built = False
        self._stats: IndexStats | None = None
        self._blocks: tuple[BlockRef, ...] | None = None
        self._categories: dict[str, str] | None = None
        self._extracted: dict[str, Extracted] = {}
        self._extraction_state: str | None = None
        self._sandbox: Sandbox | None = None
        self._results: ResultCache | None = None
        self._plugins: Plugins | None = None

    # -- index (owner: index) ---------------------------------------------------------------

    def build(self, *, progress: bool = False) -> IndexStats:
        """Materialize every source and bring the index up to date (under the cache lock)."""
        from nnrag.index.build import build_and_load

        stats, self._index = build_and_load(self.settings, progress=progress)
        self._blocks = None
        self._built = True
        self._stats = stats
        return stats

    def index(self) -> Index:
        """The up-to-date index, built on first use, loaded once per process."""
        if self._index is None:
            from nnrag.index.build import build_and_load, load_index

            if not self._built:
                self._stats, self._index = build_and_load(self.settings)
                self._built = True
            if self._index is None:
                self._index = load_index(self.settings)
        return self._index

    def unfetched(self) -> dict[str, str]:
        """Source name -> why it could not be fetched or read, for the sources of the last
        build (built on first use); they count against the pass rate."""
        if self._stats is None:
            self.build()
        assert self._stats is not None  # set by build
        return dict(self._stats.unfetched)

    # -- discovery (owner: discover) ------------------------------------------------------

    def blocks(self) -> tuple[BlockRef, ...]:
        """Every discovered block in scope (include/exclude applied), sorted by id."""
        if self._blocks is None:
            from nnrag.index.discover import discover_blocks, in_scope

            index = self.index()
            specs = {spec.name: spec for spec in self.settings.sources}
            for name, checkout in index.checkouts.items():
                specs.setdefault(name, checkout.spec)
            self._blocks = tuple(
                block
                for block in discover_blocks(index)
                if in_scope(block, specs.get(block.source))
            )
        return self._blocks

    def unmatched_paths(self) -> dict[str, tuple[str, ...]]:
        """Source name -> its ``paths`` entries that match no indexed file (config warnings)."""
        from nnrag.sources.scan import in_scope

        index = self.index()
        found: dict[str, tuple[str, ...]] = {}
        for spec in self.settings.sources:
            if not spec.paths or spec.name not in index.checkouts:
                continue
            files = [info.path for info in index.modules(spec.name)]
            missed = tuple(p for p in spec.paths if not any(in_scope(f, [p]) for f in files))
            if missed:
                found[spec.name] = missed
        return found

    def find(self, query: str) -> BlockRef:
        """A block by id (``source:module:Class``) or unambiguous bare class name."""
        from nnrag.index.discover import find_block

        return find_block(self.blocks(), query)

    # -- categories (owner: search) -------------------------------------------------------------

    def category(self, block: BlockRef) -> str:
        """The block's primary category (:func:`nnrag.retrieve.categorize.category_of`), memoized.

        Categories already in the search database (``nnrag search``) are reused when their
        module is unchanged; the others come from the per-module category files of the
        cache, or are computed once and stored there.
        """
        from nnrag.retrieve import search

        memo = self._categories
        if memo is None:
            memo = self._categories = search.stored_categories(
                search.search_path(self.settings.cache_dir), self.index()
            )
        found = memo.get(block.id)
        if found is None:
            from nnrag.retrieve.categorize import category_of

            index = self.index()
            info = index.module(block.module, prefer=block.source)
            path = None
            if info is not None and info.source == block.source:
                path = search.category_cache_path(self.settings.cache_dir, info)
            stored = search.read_category_cache(path) if path else {}
            found = stored.get(block.name)
            if found is None:
                found = category_of(index, block)
                if path:
                    search.write_category_cache(path, {**stored, block.name: found})
            memo[block.id] = found
        return found

    # -- extraction (owner: emit) --------------------------------------------------------------

    def extract(self, query: str | BlockRef) -> Extracted:
        """Resolve and emit one block (memoized per process)."""
        from nnrag.extract.block import extract

        block = self.find(query) if isinstance(query, str) else query
        found = self._extracted.get(block.id)
        if found is None:
            found = self._extracted[block.id] = extract(self.index(), block)
        return found

    def extraction_state(self) -> str:
        """Identifies everything an extraction depends on: every source's revision and scope,
        and nnrag's extraction code. Equal states give byte-identical block files."""
        if self._extraction_state is None:
            from nnrag.versions import EXTRACTION_CODE, code_fingerprint

            digest = hashlib.sha256(code_fingerprint(*EXTRACTION_CODE).encode())
            for name, checkout in sorted(self.index().checkouts.items()):
                scope = "\0".join(checkout.spec.paths)
                digest.update(f"{name}\0{checkout.revision}\0{scope}\n".encode())
            self._extraction_state = digest.hexdigest()
        return self._extraction_state

    def block_file(self, extracted: Extracted) -> Path:
        """Write the extracted block (and its spec) under the cache; return the .py path.

        The file is ``<cache>/blocks/<source>/<module>/<Class>.py``.
        """
        from nnrag.extract.block import write_block

        block = extracted.block
        folder = self.settings.cache_dir / "blocks" / block.source / block.module
        return write_block(extracted, folder, category=self.category(block))

    # -- validation (owner: validate) ------------------------------------------------------

    def sandbox(self) -> Sandbox:
        """The workspace's one sandbox, started lazily, closed by :meth:`close` or at exit."""
        if self._sandbox is None:
            import atexit

            from nnrag.validate.sandbox import Sandbox

            self._sandbox = Sandbox(strict=self.settings.sandbox == "strict")
            atexit.register(self._sandbox.close)
        return self._sandbox

    def plugins(self) -> Plugins:
        """nnrag plugins: built-ins, the ``nnrag`` entry points, ``nnragfile.py`` beside
        repos.json (loaded once)."""
        if self._plugins is None:
            from nnrag.plugins import parent_plugins

            self._plugins = parent_plugins(self.settings.repos_file)
        return self._plugins

    def sandbox_layers(self) -> dict[str, bool] | None:
        """The kernel isolation layers blocks ran under, ``None`` before the sandbox started."""
        if self._sandbox is None or not self._sandbox.info:
            return None
        return self._sandbox.layers

    def results(self) -> ResultCache:
        """The result cache, ``<cache>/results.sqlite``."""
        if self._results is None:
            from nnrag.validate.results import ResultCache

            self._results = ResultCache(self.settings.cache_dir / "results.sqlite")
        return self._results

    def close(self) -> None:
        """Stop the sandbox and close the result cache (both reopen on next use)."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        if self._results is not None:
            self._results.close()
            self._results = None

    def validate(
        self,
        query: str | BlockRef,
        *,
        depth: Stage | None = None,
        hints: BlockHints | None = None,
        final_harvest: bool = False,
    ) -> ValidationResult:
        """Validate one block to ``depth`` (default: settings.depth), using the result cache.

        ``hints`` (e.g. from the ``pytest_nnrag_block_inputs`` hook) win over config hints;
        ``final_harvest``: the harvest pass's word that the block's harvest is final
        (``nnrag.validate.stages.prepare_block``).
        """
        from nnrag.validate.stages import validate_block

        return validate_block(self, query, depth=depth, hints=hints, final_harvest=final_harvest)

    def replay(self, query: str | BlockRef) -> Replay:
        """Rebuild and rerun a block from its recorded recipe; say whether it reproduces."""
        from nnrag.validate.replay import replay_block

        return replay_block(self, query)
