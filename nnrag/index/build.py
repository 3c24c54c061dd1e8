"""The index: every module of every source, analyzed, stored by content and loaded read-only."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sqlite3
import sys
import time
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnrag.errors import CacheError, SourceError
from nnrag.model import Checkout, FileProblem, IndexStats, ModuleInfo, Settings, SourceSpec
from nnrag.sources.fetch import materialize
from nnrag.sources.scan import scan_tree, tree_digest

if TYPE_CHECKING:
    from nnrag.index.store import FileRow, Store

BlobLoader = Callable[[str], bytes | None]
"""Looks up a file's bytes by git blob SHA-1 (the store keeps them), ``None`` if unknown."""


def decode_source(data: bytes) -> str:
    """A Python file's text, decoded as ``index.units`` does (PEP 263 cookie or UTF-8, no BOM).

    Line endings are kept as they are in the file.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


class Index:
    """Read-only, in-memory view of the indexed modules of every source."""

    def __init__(
        self,
        *,
        checkouts: Mapping[str, Checkout],
        modules: Iterable[ModuleInfo],
        problems: Iterable[FileProblem] = (),
        blobs: BlobLoader | None = None,
    ) -> None:
        self.checkouts: Mapping[str, Checkout] = dict(checkouts)
        self.problems: tuple[FileProblem, ...] = tuple(
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

    def _rank(self, source: str) -> int:
        return self._order.get(source, len(self._order))

    @property
    def sources(self) -> tuple[str, ...]:
        """Source names, most preferred first (lower ``priority`` number, then config order)."""
        return tuple(sorted(self._by_source, key=self._rank))

    def modules(self, source: str | None = None) -> Iterator[ModuleInfo]:
        """Every module (of one source), sorted by (source, module)."""
        if source is not None:
            yield from self._by_source.get(source, ())
            return
        for infos in self._by_source.values():
            yield from infos

    def module(self, name: str, *, prefer: str | None = None) -> ModuleInfo | None:
        """The module called ``name``: from source ``prefer`` if it has one, else by priority."""
        infos = self._by_name.get(name)
        if not infos:
            return None
        if prefer is not None:
            for info in infos:
                if info.source == prefer:
                    return info
        return infos[0]

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
        """Top-level import names (packages and modules) the source defines."""
        return self._packages.get(source, frozenset())

    def source_of_module(self, name: str) -> str | None:
        """The source that owns ``name``'s top-level package (by priority when several do)."""
        return self._owner.get(name.split(".", 1)[0])


def _position(checkouts: Mapping[str, Checkout], name: str) -> int:
    for position, key in enumerate(checkouts):
        if key == name:
            return position
    return len(checkouts)


def analyze_file(
    *, source: str, root: Path, path: str, data: bytes | None = None
) -> ModuleInfo | FileProblem:
    """Analyze one file of a tree with :mod:`nnrag.index.units` (which decodes and parses it)."""
    from nnrag.index.units import analyze_module, module_name_for

    if data is None:
        try:
            data = (root / path).read_bytes()
        except OSError as error:
            return FileProblem(source=source, path=path, message=f"cannot read: {error.strerror}")
    module, is_package = module_name_for(root / path, root)
    return analyze_module(source=source, module=module, path=path, data=data, is_package=is_package)


def index_tree(root: Path, *, source: str = "src") -> Index:
    """Index a folder in memory (no cache, no processes): for tests and small trees."""
    from nnrag.sources.scan import git_blob_sha1

    root = Path(root).resolve()
    if not root.is_dir():
        raise SourceError("folder does not exist", source=source, location=str(root))
    entries, problems = scan_tree(root, source=source)
    modules: list[ModuleInfo] = []
    found: list[FileProblem] = list(problems)
    digests: list[tuple[str, str]] = []
    for entry in entries:
        data = entry.file.read_bytes()
        digests.append((entry.path, git_blob_sha1(data)))
        result = analyze_file(source=source, root=root, path=entry.path, data=data)
        if isinstance(result, ModuleInfo):
            modules.append(result)
        else:
            found.append(result)
    spec = SourceSpec(name=source, kind="path", location=str(root))
    checkout = Checkout(spec=spec, root=root, revision=tree_digest(digests), origin=str(root))
    return Index(checkouts={source: checkout}, modules=modules, problems=found)


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
    return Index(checkouts=checkouts, modules=modules, problems=problems, blobs=_BlobReader(path))


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
                    state = _state(counts)
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
                "problems": [[p.source, p.path, p.message, p.line, p.col] for p in index.problems],
            }
            with Store(path) as store:
                store.set_meta("stats", summary)
    problems = {p for c in counts for p in c.problems}
    problems.update(
        FileProblem(source=s, path=p, message=m, line=line, col=col)
        for s, p, m, line, col in summary["problems"]
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
    )
    return stats, index


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


def _state(counts: Sequence[_Counts]) -> str:
    """Identifies what was indexed (and by which code), so cached counts can be trusted."""
    from nnrag.index.store import analyzer_version
    from nnrag.versions import code_fingerprint

    digest = hashlib.sha1(analyzer_version().encode(), usedforsecurity=False)
    digest.update(code_fingerprint("discover", "symbols").encode())
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
        problems: Sequence[FileProblem] = (),
        state: str = "",
    ) -> None:
        self.files = files
        self.parsed = parsed
        self.error = error
        self.problems = tuple(problems)
        self.state = state


def _index_source(store: Store, spec: SourceSpec, settings: Settings, *, progress: bool) -> _Counts:
    from nnrag.index.store import Analysis, FileRow
    from nnrag.index.units import module_name_for
    from nnrag.sources.scan import git_blob_sha1

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
                problems.append(
                    FileProblem(source=spec.name, path=entry.path, message=f"cannot read: {error}")
                )
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
    missing = store.missing_analyses((r.sha1, r.module, r.is_package) for r in rows)
    todo = [r for r in rows if (r.sha1, r.module, r.is_package) in missing]
    todo = list({(r.sha1, r.module, r.is_package): r for r in todo}.values())
    for row in list(todo):
        if row.path not in data_of:
            try:
                data_of[row.path] = (root / row.path).read_bytes()
            except OSError as error:
                problems.append(
                    FileProblem(source=spec.name, path=row.path, message=f"cannot read: {error}")
                )
                todo.remove(row)
                rows.remove(row)
    results = _analyze_all(spec.name, root, todo, data_of, settings, progress=progress)
    analyses = [
        Analysis(
            sha1=row.sha1,
            module=row.module,
            is_package=row.is_package,
            info=result if isinstance(result, str) else None,
            problem=result if isinstance(result, FileProblem) else None,
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


def _analyze_all(
    source: str,
    root: Path,
    rows: Sequence[FileRow],
    data_of: Mapping[str, bytes],
    settings: Settings,
    *,
    progress: bool,
) -> list[str | FileProblem]:
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
            out: list[str | FileProblem] = []
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


def _analyze_one(source: str, item: tuple[str, str, bool, bytes]) -> str | FileProblem:
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
        return FileProblem(
            source=source,
            path=path,
            message=f"internal error in nnrag while analyzing this file (please report it): "
            f"{type(error).__name__}: {error}",
        )


def _analyze_batch(
    source: str, batch: Sequence[tuple[str, str, bool, bytes]]
) -> list[str | FileProblem]:
    return [_analyze_one(source, item) for item in batch]
