"""The one SQLite policy: WAL, schema version, damaged/foreign/older files rebuilt with a notice."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nnrag.errors import CacheError
from nnrag.model import ValidationResult
from nnrag.retrieve.search import SearchIndex
from nnrag.sqlitedb import open_database
from nnrag.validate.results import ResultCache, cache_key

SCHEMA = "CREATE TABLE items (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
APP = 0x6E6E7274


def open_test(
    path: Path, *, version: int = 3, create: bool = True
) -> tuple[sqlite3.Connection, str]:
    opened = open_database(
        path, what="test cache", schema=SCHEMA, version=version, application_id=APP, create=create
    )
    return opened.db, opened.notice


def filled(path: Path) -> None:
    db, notice = open_test(path)
    assert notice == ""  # a new database is created silently
    with db:
        db.execute("INSERT INTO items VALUES ('a', 'b')")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def test_new_database_is_wal_with_header(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "test.db"
    filled(path)
    db, notice = open_test(path)
    assert notice == ""
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == 3
    assert db.execute("PRAGMA application_id").fetchone()[0] == APP
    assert db.execute("SELECT value FROM items").fetchall() == [("b",)]
    db.close()


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(b"this is not a database at all" * 100),
        lambda path: path.write_bytes(path.read_bytes()[:5000]),
    ],
    ids=["garbage", "truncated"],
)
def test_damaged_file_is_rebuilt_with_one_notice(tmp_path: Path, damage: object) -> None:
    path = tmp_path / "test.db"
    filled(path)
    damage(path)  # type: ignore[operator]  # a lambda from the parametrization
    with pytest.raises(sqlite3.DatabaseError):
        open_test(path, create=False)  # readers never rebuild
    db, notice = open_test(path)
    assert notice.startswith(f"nnrag: the test cache at {path} was damaged (")
    assert notice.endswith("); rebuilding it")
    assert "\n" not in notice
    assert db.execute("SELECT count(*) FROM items").fetchone()[0] == 0
    db.close()


def test_foreign_and_other_versions_are_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "test.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE stuff (x)")
    db.close()
    assert open_test(path)[1] == f"nnrag: {path} is not an nnrag test cache of this version; " + (
        "rebuilding it"
    )
    assert open_test(path, version=4)[1] == f"nnrag: {path} is an older nnrag test cache; " + (
        "rebuilding it"
    )
    assert open_test(path, version=2)[1] == f"nnrag: {path} is a newer nnrag test cache; " + (
        "rebuilding it"
    )
    assert open_test(path, version=2)[1] == ""


def test_unopenable_path_raises_and_keeps_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a-folder.db"
    path.mkdir()  # sqlite cannot open a folder: an OperationalError, not damage
    with pytest.raises(sqlite3.OperationalError):
        open_test(path)
    assert path.is_dir()


RESULT = ValidationResult(block_id="s:m:C", depth="forward", stage_reached="forward")


def test_damaged_result_cache_is_rebuilt_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.sqlite"
    cache = ResultCache(path)
    key = cache_key("sha256:x", "forward", torch="2")
    cache.put(key, RESULT)
    cache.close()
    path.write_bytes(b"garbage" * 1000)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    cache = ResultCache(path)  # raised CacheError before, failing every block
    assert cache.get(key) is None
    cache.put(key, RESULT)
    got = cache.get(key)
    assert got is not None
    assert (got.block_id, got.cached) == ("s:m:C", True)
    cache.close()
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"nnrag: the result cache at {path} was damaged (")


def test_unwritable_result_cache_names_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    path.mkdir()
    with pytest.raises(CacheError, match=r"cannot open the result cache .* --cache"):
        ResultCache(path)


def test_older_search_database_is_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "search.db"
    with sqlite3.connect(path) as db:  # as nnrag wrote it before the header was set
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.close()
    with SearchIndex(path) as table:
        assert table.count() == 0
    assert "is not an nnrag search database of this version; rebuilding it" in (
        capsys.readouterr().err
    )
