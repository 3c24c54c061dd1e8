"""Module names of a checkout as Python imports them from its root, and the ``extern`` policy."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from nnrag.errors import CacheError
from nnrag.model import Checkout, Diagnostic, ModuleInfo

if TYPE_CHECKING:
    from nnrag.index.store import Store

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", ".git", ".hg", ".svn"})


class Layout:
    """Where the importable modules of one checkout live, found without parsing anything.

    The checkout root is on ``sys.path``: a top folder with ``__init__.py`` is a package, one
    without is a namespace package (yolov5's ``models/``, mae's ``util/``), a top ``.py`` file
    is a module. A regular package under folders without ``__init__.py`` (``src/transformers``)
    is a top-level package too, as :func:`nnrag.index.units.module_name_for` names it.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._tops: dict[str, tuple[Path, ...]] | None = None
        self._files: dict[str, tuple[str, bool] | None] = {}

    @property
    def tops(self) -> Mapping[str, tuple[Path, ...]]:
        """Top-level import name -> the folders (``sys.path`` entries) holding it."""
        if self._tops is None:
            found: dict[str, list[Path]] = {}
            if (self.root / "__init__.py").is_file() and self.root.name.isidentifier():
                found[self.root.name] = [self.root.parent]
            else:
                self._scan(self.root, found, top=True)
            self._tops = {name: tuple(bases) for name, bases in found.items()}
        return self._tops

    def _scan(self, folder: Path, found: dict[str, list[Path]], *, top: bool) -> None:
        """Record the packages (and, at the root, modules and namespace folders) in ``folder``."""
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            name = entry.name
            if entry.is_dir() and name not in _SKIP_DIRS and not name.startswith("."):
                package = os.path.isfile(os.path.join(entry.path, "__init__.py"))
                if package and name.isidentifier():
                    found.setdefault(name, []).append(folder)
                    continue
                if not package:
                    if top and name.isidentifier():
                        found.setdefault(name, []).append(folder)
                    self._scan(Path(entry.path), found, top=False)
            elif top and name.endswith(".py") and name[:-3].isidentifier():
                found.setdefault(name[:-3], []).append(folder)

    def files_under(self, top: str) -> Iterator[Path]:
        """Every ``.py`` file of top-level package (or module) ``top``, in path order."""
        for base in self.tops.get(top, ()):
            folder = base / top
            if not folder.is_dir():
                module = base / f"{top}.py"
                if module.is_file():
                    yield module
                continue
            for where, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield Path(where, name)

    def file_for(self, module: str) -> tuple[str, bool] | None:
        """(POSIX path relative to the root, is a package) of ``module``'s file, or ``None``.

        Only a file :func:`~nnrag.index.units.module_name_for` gives exactly this name counts
        (so the index and this lookup always agree).
        """
        if module in self._files:
            return self._files[module]
        from nnrag.index.units import module_name_for

        found: tuple[str, bool] | None = None
        top, *rest = module.split(".")
        for base in self.tops.get(top, ()):
            stem = base.joinpath(top, *rest)
            for file, is_package in (
                (stem.with_name(stem.name + ".py"), False),
                (stem / "__init__.py", True),
            ):
                if file.is_file() and module_name_for(file, self.root) == (module, is_package):
                    found = (file.relative_to(self.root).as_posix(), is_package)
                    break
            if found is not None:
                break
        self._files[module] = found
        return found


class Extern:
    """The ``extern`` policy: dotted packages (with their submodules) and globs never inlined."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        self._memo: dict[str, bool] = {}

    def __call__(self, module: str) -> bool:
        """Whether ``module`` (a dotted name) is kept as an import even where indexed."""
        found = self._memo.get(module)
        if found is None:
            found = any(matches(pattern, module) for pattern in self.patterns)
            self._memo[module] = found
        return found


def unused_extern(patterns: Iterable[str], names: Iterable[str]) -> tuple[str, ...]:
    """A warning for each ``extern`` pattern that matches none of ``names`` (modules the
    sources define and import); none when no source was indexed, since then nothing could
    match (the source's own error says what is wrong)."""
    left = list(dict.fromkeys(patterns))
    names = list(names)
    if not names:
        return ()
    for name in names:
        left = [pattern for pattern in left if not matches(pattern, name)]
        if not left:
            break
    return tuple(
        f"repos.json 'extern' pattern {pattern!r} matches no module of any source and no "
        "import of one; check its spelling (a dotted package such as 'torch', or a glob "
        "such as 'mmcv._ext*')"
        for pattern in left
    )


def matches(pattern: str, module: str) -> bool:
    """``torch`` matches ``torch`` and ``torch.nn``; a glob (``mmcv._ext*``) matches by fnmatch."""
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(module, pattern)
    return module == pattern or module.startswith(pattern + ".")


class OnDemand:
    """Modules outside every source's ``paths``, indexed when resolution first reaches them.

    ``paths`` choose which classes are blocks; a closure may import any module of any
    configured source. Such a module is parsed once per process and its analysis kept in
    the index database (keyed by blob SHA-1 like every other), so later runs and other
    workers read it instead of parsing it again.
    """

    def __init__(self, checkouts: Mapping[str, Checkout], cache: AnalysisCache | None) -> None:
        self.layouts = {name: Layout(checkout.root) for name, checkout in checkouts.items()}
        self.cache = cache
        self._found: dict[tuple[str, str], ModuleInfo | None] = {}
        self.problems: dict[tuple[str, str], Diagnostic] = {}

    def module(self, source: str, name: str) -> ModuleInfo | None:
        """Module ``name`` of ``source`` (parsed on first use), ``None`` if it has no such file."""
        key = (source, name)
        if key in self._found:
            return self._found[key]
        found: ModuleInfo | None = None
        layout = self.layouts.get(source)
        place = layout.file_for(name) if layout is not None else None
        if layout is not None and place is not None:
            found = self._analyze(source, layout.root, name, *place)
        self._found[key] = found
        return found

    def reached(self) -> tuple[ModuleInfo, ...]:
        """The modules indexed on demand so far (for statistics)."""
        return tuple(info for info in self._found.values() if info is not None)

    def _analyze(
        self, source: str, root: Path, name: str, path: str, is_package: bool
    ) -> ModuleInfo | None:
        from nnrag.index.store import decode_module, encode_module
        from nnrag.index.units import analyze_module
        from nnrag.sources.scan import git_blob_sha1

        try:
            data = (root / path).read_bytes()
        except OSError:
            return None
        sha1 = git_blob_sha1(data)
        if self.cache is not None:
            text = self.cache.get(sha1, name, is_package)
            if text is not None:
                return decode_module(text, source=source, path=path)
        result = analyze_module(
            source=source, module=name, path=path, data=data, is_package=is_package
        )
        if isinstance(result, Diagnostic):
            self.problems[(source, name)] = result
            return None
        if self.cache is not None:
            self.cache.put(source, name, sha1, is_package, encode_module(result))
        return result


class AnalysisCache:
    """Reads and writes on-demand analyses in the index database (one connection per process)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._store: Store | None = None
        self._pid = 0

    def _open(self) -> Store | None:
        from nnrag.index.store import Store

        if self._store is None or self._pid != os.getpid():
            try:
                self._store = Store(self.path, create=False)
            except (CacheError, sqlite3.DatabaseError):
                return None
            self._pid = os.getpid()
        return self._store

    def get(self, sha1: str, module: str, is_package: bool) -> str | None:
        store = self._open()
        if store is None:
            return None
        try:
            return store.analysis(sha1, module, is_package)[0]
        except sqlite3.DatabaseError:
            return None

    def put(self, source: str, module: str, sha1: str, is_package: bool, info: str) -> None:
        from nnrag.index.store import Analysis

        store = self._open()
        if store is None:
            return
        analysis = Analysis(sha1=sha1, module=module, is_package=is_package, info=info)
        with contextlib.suppress(sqlite3.DatabaseError):  # a cache: a busy database costs a parse
            store.add_reached(source, module, analysis)

    def __getstate__(self) -> dict[str, object]:
        return {"path": self.path, "_store": None, "_pid": 0}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.path = state["path"]  # type: ignore[assignment]  # pickled by __getstate__ above
        self._store = None
        self._pid = 0
