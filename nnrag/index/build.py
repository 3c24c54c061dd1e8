"""Building the index: materialize each source, analyze changed files into the store, load it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnrag.diagnostics import diagnostic, restore
from nnrag.errors import CacheError, SourceError
from nnrag.index.layout import AnalysisCache, unused_extern
from nnrag.index.snapshot import BlobLoader, Index, decode_source
from nnrag.model import (
    DEFAULT_EXTERN,
    Checkout,
    Diagnostic,
    IndexStats,
    ModuleInfo,
    Settings,
    SourceSpec,
)
from nnrag.sources.fetch import materialize
from nnrag.sources.scan import scan_tree, tree_digest

if TYPE_CHECKING:
    from nnrag.index.store import FileRow, Store
    from nnrag.sources.scan import FileEntry

__all__ = [
    "BlobLoader",
    "Index",
    "analyze_file",
    "build_and_load",
    "build_index",
    "decode_source",
    "index_tree",
    "index_trees",
    "load_index",
]


def analyze_file(
    *, source: str, root: Path, path: str, data: bytes | None = None
) -> ModuleInfo | Diagnostic:
    """Analyze one file of a tree with :mod:`nnrag.index.units` (which decodes and parses it)."""
    from nnrag.index.units import analyze_module, module_name_for

    if data is None:
        try:
            data = (root / path).read_bytes()
        except OSError as error:
            return diagnostic("NNR401", source=source, path=path, error=error.strerror)
    module, is_package = module_name_for(root / path, root)
    return analyze_module(source=source, module=module, path=path, data=data, is_package=is_package)


def index_tree(
    root: Path,
    *,
    source: str = "src",
    paths: Sequence[str] = (),
    extern: Iterable[str] = DEFAULT_EXTERN,
) -> Index:
    """Index a folder in memory (no cache, no processes): for tests and small trees."""
    location = str(Path(root).resolve())
    spec = SourceSpec(name=source, kind="path", location=location, paths=tuple(paths))
    return index_trees((spec,), extern=extern)


def index_trees(specs: Sequence[SourceSpec], *, extern: Iterable[str] = DEFAULT_EXTERN) -> Index:
    """Index local folders (``path`` sources) in memory, honouring ``paths``: for tests."""
    from nnrag.sources.scan import git_blob_sha1

    checkouts: dict[str, Checkout] = {}
    modules: list[ModuleInfo] = []
    found: list[Diagnostic] = []
    for spec in specs:
        root = Path(spec.location).resolve()
        if not root.is_dir():
            raise SourceError("folder does not exist", source=spec.name, location=str(root))
        entries, problems = scan_tree(root, source=spec.name, paths=spec.paths)
        found.extend(problems)
        digests: list[tuple[str, str]] = []
        for entry in entries:
            data = entry.file.read_bytes()
            digests.append((entry.path, git_blob_sha1(data)))
            result = analyze_file(source=spec.name, root=root, path=entry.path, data=data)
            if isinstance(result, ModuleInfo):
                modules.append(result)
            else:
                found.append(result)
        revision = tree_digest(digests)
        checkouts[spec.name] = Checkout(spec=spec, root=root, revision=revision, origin=str(root))
    return Index(checkouts=checkouts, modules=modules, problems=found, extern=extern)


# --------------------------------------------------------------------------- building

PARALLEL_MIN_FILES = 48
"""Below this many files to parse, parse in this process (a pool costs more than it saves)."""


def build_index(settings: Settings, *, progress: bool = False) -> IndexStats:
    """Materialize every source and bring the stored index up to date (under the writer lock)."""
    return build_and_load(settings, progress=progress)[0]


def load_index(settings: Settings) -> Index:
    """The stored index of ``settings``' sources, read from one consistent snapshot.

    Raises :class:`~nnrag.errors.CacheError` if there is no usable index; run
    :func:`build_index` (``nnrag index``) first.
    """
    from nnrag.index.store import Store, db_path

    path = db_path(settings.cache_dir)
    try:
        with Store(path, create=False) as store:
            checkouts, modules, problems = store.load(settings.sources)
    except sqlite3.DatabaseError as error:
        raise CacheError(
            f"the index at {path} is damaged ({error}); run `nnrag index` to rebuild it"
        ) from None
    return Index(
        checkouts=checkouts,
        modules=modules,
        problems=problems,
        blobs=_BlobReader(path),
        extern=settings.extern,
        analyses=AnalysisCache(path),
    )


class _BlobReader:
    """Reads stored file bytes on demand (a fresh connection: safe across fork and pickling)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, sha1: str) -> bytes | None:
        from nnrag.index.store import Store

        try:
            with Store(self.path, create=False) as store:
                return store.blob(sha1)
        except (CacheError, sqlite3.DatabaseError):
            return None


def build_and_load(
    settings: Settings, *, progress: bool = False
) -> tuple[IndexStats, Index | None]:
    """:func:`build_index`, and the index if it had to be loaded (``None`` when up to date).

    When nothing changed since the last build, the counts come from the store and the index is
    not loaded at all (so a warm ``nnrag index`` only walks and stats the sources).
    """
    from nnrag.index.store import Store, db_path

    started = time.perf_counter()
    path = db_path(settings.cache_dir)
    with _locked(settings.cache_dir):
        for attempt in (1, 2):
            store = Store(path)
            for notice in store.notices:
                print(notice, file=sys.stderr)
            try:
                with store:
                    counts = [
                        _index_source(store, spec, settings, progress=progress)
                        for spec in settings.sources
                    ]
                    state = _state(counts, settings.extern)
                    cached = store.get_meta("stats")
                break
            except sqlite3.DatabaseError as error:
                if attempt == 2:
                    raise CacheError(f"cannot write the index at {path}: {error}") from None
                print(
                    f"nnrag: the index at {path} was damaged ({error}); rebuilding it",
                    file=sys.stderr,
                )
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
        index: Index | None = None
        if cached is not None and cached.get("state") == state:
            summary = cached
        else:
            index = load_index(settings)
            modules = list(index.modules())
            summary = {
                "state": state,
                "sources": len(index.checkouts),
                "modules": len(modules),
                "lines": sum(m.lines for m in modules),
                "blocks": _count_blocks(index),
                "problems": [
                    [p.code, p.source, p.path, p.message, p.line, p.col] for p in index.problems
                ],
                "warnings": list(unused_extern(settings.extern, _module_names(index))),
            }
            with Store(path) as store:
                store.set_meta("stats", summary)
    problems = {p for c in counts for p in c.problems}
    problems.update(
        restore(code, m, source=s, path=p, line=line, col=col)
        for code, s, p, m, line, col in summary["problems"]
    )
    stats = IndexStats(
        sources=summary["sources"],
        files=sum(c.files for c in counts),
        modules=summary["modules"],
        blocks=summary["blocks"],
        parsed=sum(c.parsed for c in counts),
        lines=summary["lines"],
        seconds=time.perf_counter() - started,
        problems=tuple(sorted(problems, key=lambda p: (p.source, p.path, p.line, p.message))),
        source_errors=tuple(c.error for c in counts if c.error),
        unfetched={
            s.name: c.error for s, c in zip(settings.sources, counts, strict=True) if c.error
        },
        warnings=tuple(summary.get("warnings", ())),
    )
    return stats, index


def _module_names(index: Index) -> Iterator[str]:
    """Every module the sources define or import (for the ``extern`` check)."""
    for info in index.modules():
        yield info.module
        for unit in info.units:
            for binding in unit.imports:
                yield binding.module
    for source in index.sources:
        yield from index.on_demand.layouts[source].tops


@contextlib.contextmanager
def _locked(cache_dir: Path) -> Iterator[None]:
    """Hold the index writer lock, turning an unusable cache folder into a CacheError."""
    import filelock

    from nnrag.index.store import writer_lock

    try:
        lock = writer_lock(cache_dir)
        lock.acquire()
    except filelock.Timeout:
        raise CacheError(
            f"another nnrag process has held the index lock in {cache_dir} for over "
            f"{lock.timeout:.0f} s; wait for it, or remove {lock.lock_file} if none is running"
        ) from None
    except OSError as error:
        raise CacheError(
            f"cannot use the cache folder {cache_dir}: {error.strerror or error}; "
            "pass --cache DIR or set NNRAG_CACHE_DIR to a writable folder"
        ) from None
    try:
        yield
    finally:
        lock.release()


def _state(counts: Sequence[_Counts], extern: Sequence[str]) -> str:
    """Identifies what was indexed (and by which code), so cached counts can be trusted."""
    from nnrag.index.store import analyzer_version
    from nnrag.versions import code_fingerprint

    digest = hashlib.sha1(analyzer_version().encode(), usedforsecurity=False)
    fingerprint = code_fingerprint("index/discover.py", "index/symbols.py", "index/layout.py")
    digest.update(fingerprint.encode())
    digest.update("\0".join(extern).encode())
    for count in counts:
        digest.update(f"{count.state}\n".encode())
    return digest.hexdigest()


def _count_blocks(index: Index) -> int:
    try:
        from nnrag.index.discover import discover_blocks
    except ImportError:
        return 0
    return len(discover_blocks(index))


class _Counts:
    """What indexing one source did; ``state`` identifies its checkout and files."""

    def __init__(
        self,
        *,
        files: int = 0,
        parsed: int = 0,
        error: str = "",
        problems: Sequence[Diagnostic] = (),
        state: str = "",
    ) -> None:
        self.files = files
        self.parsed = parsed
        self.error = error
        self.problems = tuple(problems)
        self.state = state


def _index_source(store: Store, spec: SourceSpec, settings: Settings, *, progress: bool) -> _Counts:
    from nnrag.index.store import Analysis

    manifest = store.manifest(spec.name)
    same_place = store.recorded_root(spec.name)
    known = {row.path: (row.size, row.mtime_ns, row.sha1) for row in manifest.values()}
    try:
        memo = known if spec.kind == "path" and same_place == spec.location else None
        scanned = None
        if spec.kind == "path" and Path(spec.location).is_dir():
            scanned = scan_tree(Path(spec.location), source=spec.name, paths=spec.paths)
        checkout = materialize(
            spec, settings.cache_dir, known=memo, scanned=scanned[0] if scanned else None
        )
    except SourceError as error:
        return _Counts(error=str(error), state=f"{spec.name}\0error")
    root = checkout.root
    if same_place != str(root):
        manifest = {}
    entries, problems = scanned or scan_tree(root, source=spec.name, paths=spec.paths)
    rows, data_of = _file_rows(spec.name, root, entries, manifest, problems)
    missing = store.missing_analyses((r.sha1, r.module, r.is_package) for r in rows)
    todo = [r for r in rows if (r.sha1, r.module, r.is_package) in missing]
    todo = list({(r.sha1, r.module, r.is_package): r for r in todo}.values())
    for row in list(todo):
        if row.path not in data_of:
            try:
                data_of[row.path] = (root / row.path).read_bytes()
            except OSError as error:
                problems.append(diagnostic("NNR401", source=spec.name, path=row.path, error=error))
                todo.remove(row)
                rows.remove(row)
    results = _analyze_all(spec.name, root, todo, data_of, settings, progress=progress)
    analyses = [
        Analysis(
            sha1=row.sha1,
            module=row.module,
            is_package=row.is_package,
            info=result if isinstance(result, str) else None,
            problem=result if isinstance(result, Diagnostic) else None,
        )
        for row, result in zip(todo, results, strict=True)
    ]
    blobs = {row.sha1: data_of[row.path] for row in rows if row.path in data_of}
    store.write_source(checkout, files=rows, analyses=analyses, blobs=blobs, problems=problems)
    state = tree_digest((f"{r.path}\0{r.module}\0{r.is_package}", r.sha1) for r in rows)
    return _Counts(
        files=len(rows),
        parsed=len(todo),
        problems=problems,
        state=f"{spec.name}\0{spec.kind}\0{spec.location}\0{checkout.revision}\0{state}",
    )


def _file_rows(
    source: str,
    root: Path,
    entries: Sequence[FileEntry],
    manifest: Mapping[str, FileRow],
    problems: list[Diagnostic],
) -> tuple[list[FileRow], dict[str, bytes]]:
    """The store rows of the scanned files, and the bytes of those read (size or mtime changed).

    A file whose size and mtime match the manifest keeps its recorded hash (and its module
    name, when the set of files is the same); an unreadable file is a problem, not a row.
    """
    from nnrag.index.store import FileRow
    from nnrag.index.units import module_name_for
    from nnrag.sources.scan import git_blob_sha1

    same_files = set(manifest) == {e.path for e in entries}
    rows: list[FileRow] = []
    data_of: dict[str, bytes] = {}
    for entry in entries:
        old = manifest.get(entry.path)
        if old is not None and (old.size, old.mtime_ns) == (entry.size, entry.mtime_ns):
            sha1 = old.sha1
        else:
            try:
                data = entry.file.read_bytes()
            except OSError as error:
                problems.append(diagnostic("NNR401", source=source, path=entry.path, error=error))
                continue
            sha1 = git_blob_sha1(data)
            data_of[entry.path] = data
        if same_files and old is not None:
            module, is_package = old.module, old.is_package
        else:
            module, is_package = module_name_for(entry.file, root)
        rows.append(
            FileRow(
                path=entry.path,
                size=entry.size,
                mtime_ns=entry.mtime_ns,
                sha1=sha1,
                module=module,
                is_package=is_package,
            )
        )
    return rows, data_of


def _analyze_all(
    source: str,
    root: Path,
    rows: Sequence[FileRow],
    data_of: Mapping[str, bytes],
    settings: Settings,
    *,
    progress: bool,
) -> list[str | Diagnostic]:
    """Each file's encoded analysis or problem, in ``rows`` order (processes when many)."""
    jobs = settings.jobs or os.cpu_count() or 1
    items = [(r.path, r.module, r.is_package, data_of[r.path]) for r in rows]
    bar = _progress_bar(len(items), source) if progress and items else None
    try:
        if jobs <= 1 or len(items) < PARALLEL_MIN_FILES:
            results = []
            for item in items:
                results.append(_analyze_one(source, item))
                if bar is not None:
                    bar.update(1)
            return results
        import multiprocessing
        import threading
        from concurrent.futures import ProcessPoolExecutor

        size = max(4, len(items) // (jobs * 4))
        batches = [items[i : i + size] for i in range(0, len(items), size)]
        method = "fork" if threading.active_count() == 1 else "forkserver"
        with ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=multiprocessing.get_context(method),
            initializer=_die_with_parent,
            initargs=(os.getpid() if method == "fork" else None,),  # else: the forkserver's child
        ) as pool:
            futures = [pool.submit(_analyze_batch, source, batch) for batch in batches]
            out: list[str | Diagnostic] = []
            for future in futures:
                part = future.result()
                out.extend(part)
                if bar is not None:
                    bar.update(len(part))
            return out
    finally:
        if bar is not None:
            bar.close()


def _die_with_parent(parent: int | None) -> None:
    """Pool worker initializer: end with the process that started the pool, even on SIGKILL.

    A worker blocked on the pool's queue never sees the parent go (its siblings hold the
    queue open), so without this a ``kill -9`` of ``nnrag index`` leaves the workers running.
    """
    import ctypes
    import signal

    prctl = getattr(ctypes.CDLL(None), "prctl", None)
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (the forkserver ends with its parent)
    if parent is not None and os.getppid() != parent:
        os._exit(1)  # the parent died before the signal was armed


def _progress_bar(total: int, source: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=f"indexing {source}", unit="file", leave=False)


def _analyze_one(source: str, item: tuple[str, str, bool, bytes]) -> str | Diagnostic:
    """One file's analysis, encoded for the store (in the worker: it parallelizes too)."""
    from nnrag.index.store import encode_module
    from nnrag.index.units import analyze_module

    path, module, is_package, data = item
    try:
        result = analyze_module(
            source=source, module=module, path=path, data=data, is_package=is_package
        )
        return encode_module(result) if isinstance(result, ModuleInfo) else result
    except Exception as error:
        failure = f"{type(error).__name__}: {error}"
        return diagnostic("NNR409", source=source, path=path, error=failure)


def _analyze_batch(
    source: str, batch: Sequence[tuple[str, str, bool, bytes]]
) -> list[str | Diagnostic]:
    return [_analyze_one(source, item) for item in batch]
