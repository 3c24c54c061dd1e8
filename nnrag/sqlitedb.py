"""Opening nnrag's SQLite caches: WAL, a schema version, and a damaged file rebuilt with a notice.

The index (``index.sqlite3``), the search database (``search.db``) and the result cache
(``results.sqlite``) are all caches of something nnrag can compute again, so they share one
policy: a file that is damaged, foreign or of another schema version is removed and created
anew, with a one-line notice saying so; a file that is only locked or unreadable is not
evidence of damage and raises. Readers (``create=False``) never rebuild: they raise.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Opened", "open_database"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    """An open database and the notice to show if it had to be rebuilt (else ``""``)."""

    db: sqlite3.Connection
    notice: str = ""


def open_database(
    path: Path,
    *,
    what: str,
    schema: str,
    version: int,
    application_id: int,
    create: bool = True,
    lock: bool = True,
    check: Callable[[sqlite3.Connection], None] | None = None,
    isolation_level: Literal["DEFERRED", "IMMEDIATE", "EXCLUSIVE"] | None = "DEFERRED",
) -> Opened:
    """Open (and if needed create or rebuild) the database ``what`` at ``path``.

    ``schema`` is the SQL that creates the tables of a new database; ``version`` and
    ``application_id`` are stored in its header (``PRAGMA user_version``/``application_id``)
    and must match on every later open. ``check`` may probe an existing database further (it
    raises :class:`sqlite3.DatabaseError` if the contents are unusable). With ``lock``,
    creating and rebuilding happen under a ``filelock`` beside the file (``<path>.lock``), so
    concurrent processes (xdist workers) take turns; pass ``lock=False`` when the caller holds
    a lock of its own. ``create=False`` opens an existing database only and raises
    :class:`sqlite3.DatabaseError` instead of rebuilding. Other errors (a locked or unwritable
    file, :class:`sqlite3.OperationalError`, :class:`OSError`) propagate. The connection may be
    used from any thread (the caller serializes); ``isolation_level`` is ``sqlite3``'s.
    """
    if not create:
        opened = Opened(db=_open_existing(path, version, application_id, check, create=False))
    elif not lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        opened = _open_or_rebuild(
            path,
            what=what,
            schema=schema,
            version=version,
            application_id=application_id,
            check=check,
        )
    else:
        from filelock import FileLock

        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{path}.lock", timeout=120):
            opened = _open_or_rebuild(
                path,
                what=what,
                schema=schema,
                version=version,
                application_id=application_id,
                check=check,
            )
    opened.db.isolation_level = isolation_level
    return opened


def _open_or_rebuild(
    path: Path,
    *,
    what: str,
    schema: str,
    version: int,
    application_id: int,
    check: Callable[[sqlite3.Connection], None] | None,
) -> Opened:
    notice = ""
    try:
        return Opened(db=_open_existing(path, version, application_id, check, create=True))
    except sqlite3.OperationalError:
        raise  # locked, read-only, out of disk: not evidence of damage, keep the file
    except _Foreign as foreign:
        if foreign.kind:  # else a new, empty file: nothing to say
            notice = f"nnrag: {path} is {foreign.kind.format(what=what)}; rebuilding it"
    except sqlite3.DatabaseError as error:
        notice = f"nnrag: the {what} at {path} was damaged ({error}); rebuilding it"
    remove_database(path)
    db = _connect(path)
    try:
        db.executescript(
            f"BEGIN IMMEDIATE;{schema};PRAGMA application_id={application_id};"
            f"PRAGMA user_version={version};COMMIT;"
        )
    except BaseException:
        db.close()
        raise
    return Opened(db=db, notice=notice)


class _Foreign(sqlite3.DatabaseError):
    """A readable database that is empty, not ours, or ours of another schema version."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind.format(what="database") if kind else "empty database")
        self.kind = kind


def _open_existing(
    path: Path,
    version: int,
    application_id: int,
    check: Callable[[sqlite3.Connection], None] | None,
    *,
    create: bool,
) -> sqlite3.Connection:
    """Open ``path`` if it holds our database of ``version``; raise DatabaseError otherwise.

    An empty file (or none, with ``create``) raises :class:`_Foreign` with kind ``""``.
    """
    if not create and not path.exists():
        raise sqlite3.DatabaseError(f"no database at {path}")
    db = _connect(path)
    try:
        app = db.execute("PRAGMA application_id").fetchone()[0]
        found = db.execute("PRAGMA user_version").fetchone()[0]
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        if app != application_id or found != version:
            if not tables:
                raise _Foreign("")
            if app != application_id:  # foreign, or written before nnrag used this header
                raise _Foreign("not an nnrag {what} of this version")
            raise _Foreign("an older nnrag {what}" if found < version else "a newer nnrag {what}")
        for table in tables:  # reads each table's root page: a truncated file fails here
            db.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchall()
        if check is not None:
            check(db)
    except BaseException:
        db.close()
        raise
    return db


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        db.close()
        raise
    return db


def remove_database(path: Path) -> None:
    """Remove the database file and its WAL, shared-memory and rollback journal files."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def open_cache(
    path: Path, *, what: str, schema: str, version: int, application_id: int
) -> sqlite3.Connection:
    """Open (creating or rebuilding) the cache database ``what`` at ``path``; a rebuild
    prints its one-line notice. Raises :class:`~nnrag.errors.CacheError` naming the file and
    the fix when it cannot be opened at all (an unwritable cache folder)."""
    import sys

    from nnrag.errors import CacheError

    try:
        opened = open_database(
            path, what=what, schema=schema, version=version, application_id=application_id
        )
    except (OSError, sqlite3.OperationalError) as error:
        raise CacheError(
            f"cannot open the {what} {path}: {error}; check that the cache folder is "
            "writable or choose another one with --cache DIR"
        ) from error
    if opened.notice:
        print(opened.notice, file=sys.stderr)
    return opened.db
