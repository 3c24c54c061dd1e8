"""The index database: SQLite (WAL), analyses keyed by git blob SHA-1, per-source file manifests."""

from __future__ import annotations

import functools
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from nnrag.diagnostics import restore
from nnrag.errors import CacheError
from nnrag.model import Checkout, Diagnostic, ModuleInfo, SourceSpec
from nnrag.sqlitedb import open_database

SCHEMA_VERSION = 3
APPLICATION_ID = 0x6E6E7267  # "nnrg": tells our databases from any other SQLite file
DB_NAME = "index.sqlite3"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE blobs (sha1 TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE analyses (
    sha1 TEXT NOT NULL, module TEXT NOT NULL, is_package INTEGER NOT NULL,
    info TEXT, problem TEXT,
    PRIMARY KEY (sha1, module, is_package)
);
CREATE TABLE sources (
    name TEXT PRIMARY KEY, kind TEXT NOT NULL, location TEXT NOT NULL, root TEXT NOT NULL,
    revision TEXT NOT NULL, origin TEXT NOT NULL, license TEXT, problems TEXT NOT NULL
);
CREATE TABLE reached (
    source TEXT NOT NULL, module TEXT NOT NULL, sha1 TEXT NOT NULL,
    PRIMARY KEY (source, module, sha1)
);
CREATE TABLE files (
    source TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha1 TEXT NOT NULL, module TEXT NOT NULL, is_package INTEGER NOT NULL,
    PRIMARY KEY (source, path)
);
"""

T = TypeVar("T")


# --------------------------------------------------------------------------- codec


def _encode_expression(hint: Any, value: str, names: dict[str, Any]) -> str:
    """Python source that turns ``value`` (a field typed ``hint``) into its JSON form."""
    args = get_args(hint)
    if isinstance(hint, type) and is_dataclass(hint):
        names[hint.__name__] = _encoder(hint)
        return f"{hint.__name__}({value})"
    if get_origin(hint) is tuple:
        item = _encode_expression(args[0], "x", names) if args else "x"
        return value if item == "x" else f"[{item} for x in {value}]"
    if args and type(None) in args:  # Optional[X]
        inner = _encode_expression(next(a for a in args if a is not type(None)), value, names)
        return value if inner == value else f"(None if {value} is None else {inner})"
    if get_origin(hint) in (Mapping, dict):
        return f"dict({value})"
    return value


_ENCODERS: dict[type, Callable[[Any], list[Any]]] = {}


def _encoder(cls: type) -> Callable[[Any], list[Any]]:
    """An encoder of ``cls`` objects to JSON rows, generated once as plain code."""
    cached = _ENCODERS.get(cls)
    if cached is not None:
        return cached
    hints = get_type_hints(cls)
    names: dict[str, Any] = {}
    parts = [_encode_expression(hints[f.name], f"o.{f.name}", names) for f in fields(cls)]
    exec(f"def encode(o):\n    return [{', '.join(parts)}]\n", names)  # see _decoder
    encode: Callable[[Any], list[Any]] = names["encode"]
    _ENCODERS[cls] = encode
    return encode


def _expression(hint: Any, value: str, names: dict[str, Any]) -> str:
    """Python source that turns ``value`` (the JSON form of a field typed ``hint``) back."""
    args = get_args(hint)
    if isinstance(hint, type) and is_dataclass(hint):
        names[hint.__name__] = _decoder(hint)
        return f"{hint.__name__}({value})"
    if get_origin(hint) is tuple:
        item = _expression(args[0], "x", names) if args else "x"
        if item == "x":
            return f"tuple({value})"
        return f"(tuple([{item} for x in {value}]) if {value} else ())"
    if args and type(None) in args:  # Optional[X]
        inner = _expression(next(a for a in args if a is not type(None)), value, names)
        return value if inner == value else f"(None if {value} is None else {inner})"
    return value


_DECODERS: dict[type, Callable[[list[Any]], Any]] = {}


def _decoder(cls: type[T]) -> Callable[[list[Any]], T]:
    """A decoder for ``cls``' JSON rows, generated once as plain code (loading must be fast)."""
    cached = _DECODERS.get(cls)
    if cached is not None:
        return cached
    hints = get_type_hints(cls)
    names: dict[str, Any] = {"_cls": cls}
    parts = [
        f"{f.name}={_expression(hints[f.name], f'r[{i}]', names)}"
        for i, f in enumerate(fields(cls))  # type: ignore[arg-type]  # cls is a dataclass type (checked by the callers' codecs)
    ]
    code = f"def decode(r):\n    return _cls({', '.join(parts)})\n"
    exec(code, names)  # generated from the data model's own field types
    decode: Callable[[list[Any]], T] = names["decode"]
    _DECODERS[cls] = decode
    return decode


def encode_module(info: ModuleInfo) -> str:
    """Compact JSON of a module's analysis (its source and path are stored with the file)."""
    return json.dumps(_encoder(ModuleInfo)(info), separators=(",", ":"), ensure_ascii=False)


def decode_module(text: str, *, source: str, path: str) -> ModuleInfo:
    """Inverse of :func:`encode_module`."""
    row = json.loads(text)
    names = [f.name for f in fields(ModuleInfo)]
    row[names.index("source")] = source
    row[names.index("path")] = path
    return _decoder(ModuleInfo)(row)


def _problem_json(problem: Diagnostic) -> list[object]:
    return [problem.code, problem.message, problem.line, problem.col]


@functools.cache
def analyzer_version() -> str:
    """Changes whenever the analysis code or the data model changes (stored analyses go stale).

    Computed once per process, so one run sees one version.
    """
    from nnrag.versions import ANALYSIS_CODE, code_fingerprint

    return f"{SCHEMA_VERSION}-{code_fingerprint(*ANALYSIS_CODE)}"


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRow:
    """A file of a source's manifest: where it is, its stat, content and module name."""

    path: str
    size: int
    mtime_ns: int
    sha1: str
    module: str
    is_package: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    """A new analysis result to store (a module or the problem that stopped it)."""

    sha1: str
    module: str
    is_package: bool
    info: str | None = None
    """The module's analysis, as :func:`encode_module` wrote it."""
    problem: Diagnostic | None = None


# --------------------------------------------------------------------------- store


class Store:
    """One open index database. Writers must hold :func:`writer_lock`; readers need nothing."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        self.notices: list[str] = []
        if not create and not path.exists():
            raise CacheError(f"no index at {path}; run `nnrag index` first")
        try:
            opened = open_database(
                path,
                what="index",
                schema=_SCHEMA + f"INSERT INTO meta VALUES ('analyzer', '{analyzer_version()}');",
                version=SCHEMA_VERSION,
                application_id=APPLICATION_ID,
                create=create,
                lock=False,  # writers hold writer_lock (the same file name); readers need none
                check=functools.partial(self._check_analyzer, create=create),
                isolation_level=None,
            )
        except sqlite3.OperationalError as error:  # locked, unwritable: not damage
            raise CacheError(
                f"cannot open the index at {path}: {error}; check that the cache folder is "
                "writable (or pass --cache DIR) and that no other process holds it"
            ) from None
        except sqlite3.DatabaseError as error:
            raise CacheError(
                f"the index at {path} is damaged ({error}); run `nnrag index` to rebuild it"
            ) from None
        self._db = opened.db
        if opened.notice:
            self.notices.append(opened.notice)

    def _check_analyzer(self, db: sqlite3.Connection, *, create: bool) -> None:
        row = db.execute("SELECT value FROM meta WHERE key='analyzer'").fetchone()
        current = analyzer_version()
        if row and row[0] == current:
            return
        if not create:
            raise sqlite3.DatabaseError("made by another version of nnrag's analysis")
        with _transaction(db):
            db.execute("DELETE FROM analyses")
            db.execute("DELETE FROM reached")
            db.execute("DELETE FROM files")
            db.execute("DELETE FROM sources")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('analyzer', ?)", (current,))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------

    def get_meta(self, key: str) -> dict[str, Any] | None:
        """A JSON object stored under ``key`` (``None`` if absent or unreadable)."""
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        try:
            value = json.loads(row[0]) if row else None
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def set_meta(self, key: str, value: Mapping[str, Any]) -> None:
        """Store a JSON object under ``key``."""
        with _transaction(self._db):
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(dict(value)))
            )

    def manifest(self, source: str) -> dict[str, FileRow]:
        """The files recorded for ``source`` by its last successful indexing."""
        return {
            row[0]: FileRow(
                path=row[0],
                size=row[1],
                mtime_ns=row[2],
                sha1=row[3],
                module=row[4],
                is_package=bool(row[5]),
            )
            for row in self._db.execute(
                "SELECT path, size, mtime_ns, sha1, module, is_package FROM files WHERE source=?",
                (source,),
            )
        }

    def recorded_root(self, source: str) -> str | None:
        """The checkout folder ``source`` was last indexed from."""
        row = self._db.execute("SELECT root FROM sources WHERE name=?", (source,)).fetchone()
        return str(row[0]) if row else None

    def missing_analyses(self, keys: Iterable[tuple[str, str, bool]]) -> set[tuple[str, str, bool]]:
        """Which (sha1, module, is_package) keys have no stored analysis yet."""
        wanted = set(keys)
        if not wanted:
            return set()
        sha1s = sorted({k[0] for k in wanted})
        have: set[tuple[str, str, bool]] = set()
        for start in range(0, len(sha1s), 500):
            chunk = sha1s[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for sha1, module, is_package in self._db.execute(
                f"SELECT sha1, module, is_package FROM analyses WHERE sha1 IN ({marks})",
                chunk,
            ):
                have.add((sha1, module, bool(is_package)))
        return wanted - have

    def write_source(
        self,
        checkout: Checkout,
        *,
        files: Sequence[FileRow],
        analyses: Sequence[Analysis],
        blobs: Mapping[str, bytes],
        problems: Sequence[Diagnostic],
    ) -> None:
        """Replace ``checkout``'s manifest and add new analyses, in one transaction."""
        name = checkout.spec.name
        with _transaction(self._db):
            self._db.executemany(
                "INSERT OR IGNORE INTO blobs VALUES (?, ?)",
                ((sha1, zlib.compress(data, 1)) for sha1, data in blobs.items()),
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO analyses VALUES (?, ?, ?, ?, ?)",
                (
                    (
                        a.sha1,
                        a.module,
                        int(a.is_package),
                        a.info,
                        json.dumps(_problem_json(a.problem)) if a.problem is not None else None,
                    )
                    for a in analyses
                ),
            )
            kept = {f.path for f in files}
            removed = any(
                row[0] not in kept
                for row in self._db.execute("SELECT path FROM files WHERE source=?", (name,))
            )
            self._db.execute("DELETE FROM files WHERE source=?", (name,))
            self._db.executemany(
                "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    (name, f.path, f.size, f.mtime_ns, f.sha1, f.module, int(f.is_package))
                    for f in files
                ),
            )
            if analyses or removed:
                # content no manifest refers to any more (edited or deleted files)
                self._db.execute("DELETE FROM blobs WHERE sha1 NOT IN (SELECT sha1 FROM files)")
                self._db.execute(
                    "DELETE FROM analyses WHERE sha1 NOT IN "
                    "(SELECT sha1 FROM files UNION SELECT sha1 FROM reached)"
                )
            self._db.execute(
                "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    checkout.spec.kind,
                    checkout.spec.location,
                    str(checkout.root),
                    checkout.revision,
                    checkout.origin,
                    checkout.license,
                    json.dumps([[p.code, p.path, p.message, p.line, p.col] for p in problems]),
                ),
            )

    def add_reached(self, source: str, module: str, analysis: Analysis) -> None:
        """Keep the analysis of a module indexed on demand (outside ``paths``) for later runs."""
        problem = analysis.problem
        with _transaction(self._db):
            self._db.execute(
                "INSERT OR IGNORE INTO analyses VALUES (?, ?, ?, ?, ?)",
                (
                    analysis.sha1,
                    analysis.module,
                    int(analysis.is_package),
                    analysis.info,
                    json.dumps(_problem_json(problem)) if problem is not None else None,
                ),
            )
            self._db.execute(
                "INSERT OR IGNORE INTO reached VALUES (?, ?, ?)", (source, module, analysis.sha1)
            )

    # -- reading --------------------------------------------------------------------------

    def analysis(self, sha1: str, module: str, is_package: bool) -> tuple[str | None, str | None]:
        """The stored (encoded info, problem JSON) of one file's analysis; (None, None) if none."""
        row = self._db.execute(
            "SELECT info, problem FROM analyses WHERE sha1=? AND module=? AND is_package=?",
            (sha1, module, int(is_package)),
        ).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def blob(self, sha1: str) -> bytes | None:
        """A stored file's bytes by blob SHA-1."""
        row = self._db.execute("SELECT data FROM blobs WHERE sha1=?", (sha1,)).fetchone()
        return zlib.decompress(row[0]) if row else None

    def load(
        self, specs: Sequence[SourceSpec]
    ) -> tuple[dict[str, Checkout], list[ModuleInfo], list[Diagnostic]]:
        """Checkouts, modules and problems of the given sources, from one consistent snapshot.

        A source whose location changed since it was indexed, or was never indexed, is left out.
        """
        checkouts: dict[str, Checkout] = {}
        modules: list[ModuleInfo] = []
        problems: list[Diagnostic] = []
        with _transaction(self._db, mode="DEFERRED"):
            for spec in specs:
                row = self._db.execute(
                    "SELECT kind, location, root, revision, origin, license, problems "
                    "FROM sources WHERE name=?",
                    (spec.name,),
                ).fetchone()
                if row is None or (row[0], row[1]) != (spec.kind, spec.location):
                    continue
                checkouts[spec.name] = Checkout(
                    spec=spec, root=Path(row[2]), revision=row[3], origin=row[4], license=row[5]
                )
                problems.extend(
                    restore(code, m, source=spec.name, path=p, line=line, col=col)
                    for code, p, m, line, col in json.loads(row[6])
                )
                for path, info, problem in self._db.execute(
                    "SELECT f.path, a.info, a.problem FROM files f JOIN analyses a "
                    "ON a.sha1=f.sha1 AND a.module=f.module AND a.is_package=f.is_package "
                    "WHERE f.source=? ORDER BY f.module",
                    (spec.name,),
                ):
                    if info is not None:
                        modules.append(decode_module(info, source=spec.name, path=path))
                    elif problem is not None:
                        code, message, line, col = json.loads(problem)
                        problems.append(
                            restore(code, message, source=spec.name, path=path, line=line, col=col)
                        )
        return checkouts, modules, problems


class _transaction:
    """``BEGIN``/``COMMIT`` around a block; ``ROLLBACK`` on error."""

    def __init__(self, db: sqlite3.Connection, *, mode: str = "IMMEDIATE") -> None:
        self._db = db
        self._mode = mode

    def __enter__(self) -> None:
        self._db.execute(f"BEGIN {self._mode}")

    def __exit__(self, kind: object, *rest: object) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")


def db_path(cache_dir: Path) -> Path:
    """Where the index database of a cache folder lives."""
    return cache_dir / DB_NAME


def writer_lock(cache_dir: Path, *, timeout: float = 600.0) -> Any:
    """The lock every writer of the index holds (a ``filelock.FileLock`` beside the database)."""
    import filelock

    from nnrag.cachedir import tag_cache_dir

    tag_cache_dir(cache_dir)
    return filelock.FileLock(str(cache_dir / f"{DB_NAME}.lock"), timeout=timeout)
