"""The SQLite index store: codec round trip, schema checks, damaged databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nnrag.diagnostics import diagnostic
from nnrag.errors import CacheError
from nnrag.index.store import (
    SCHEMA_VERSION,
    Analysis,
    FileRow,
    Store,
    db_path,
    decode_module,
    encode_module,
)
from nnrag.index.units import analyze_module
from nnrag.model import Checkout, ModuleInfo, SourceSpec
from nnrag.sources.scan import git_blob_sha1

CODE = b'''"""Doc."""
from __future__ import annotations

import torch.nn as nn
from .helpers import to_2tuple as pair

try:
    import einops
except ImportError:
    einops = None

__all__ = ["Mlp"]


class Mlp(nn.Module):
    """An MLP."""

    def __init__(self, dim: int, hidden: int | None = None) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, hidden or dim)

    def forward(self, x):
        return self.fc(x) + pair(1)[0]
'''


def sample() -> ModuleInfo:
    info = analyze_module(
        source="s", module="pkg.mlp", path="pkg/mlp.py", data=CODE, is_package=False
    )
    assert isinstance(info, ModuleInfo)
    return info


def test_module_round_trip() -> None:
    info = sample()
    assert info.units
    assert info.units[-1].classes
    text = encode_module(info)
    assert "\n" not in text
    assert decode_module(text, source="s", path="pkg/mlp.py") == info
    moved = decode_module(text, source="other", path="x/mlp.py")
    assert (moved.source, moved.path, moved.units) == ("other", "x/mlp.py", info.units)


def spec(tmp_path: Path) -> SourceSpec:
    return SourceSpec(name="s", kind="path", location=str(tmp_path))


def write_one(store: Store, tmp_path: Path) -> None:
    info = sample()
    row = FileRow(
        path="pkg/mlp.py",
        size=len(CODE),
        mtime_ns=1,
        sha1=info.sha1,
        module="pkg.mlp",
        is_package=False,
    )
    bad = FileRow(
        path="pkg/bad.py", size=3, mtime_ns=1, sha1="b" * 40, module="pkg.bad", is_package=False
    )
    problem = diagnostic("NNR403", source="s", path="pkg/bad.py", line=1, col=2, error="x")
    store.write_source(
        Checkout(spec=spec(tmp_path), root=tmp_path, revision="r1", origin=str(tmp_path)),
        files=[row, bad],
        analyses=[
            Analysis(sha1=info.sha1, module="pkg.mlp", is_package=False, info=encode_module(info)),
            Analysis(sha1="b" * 40, module="pkg.bad", is_package=False, problem=problem),
        ],
        blobs={info.sha1: CODE},
        problems=[diagnostic("NNR405", source="s", path="gen.py", megabytes=9.0, limit=8.0)],
    )


def test_write_and_load(tmp_path: Path) -> None:
    with Store(db_path(tmp_path / "cache")) as store:
        write_one(store, tmp_path)
        assert set(store.manifest("s")) == {"pkg/mlp.py", "pkg/bad.py"}
        assert store.missing_analyses(
            [(git_blob_sha1(CODE), "pkg.mlp", False), ("c" * 40, "m", False)]
        ) == {("c" * 40, "m", False)}
        assert store.blob(git_blob_sha1(CODE)) == CODE
    with Store(db_path(tmp_path / "cache"), create=False) as reader:
        checkouts, modules, problems = reader.load([spec(tmp_path)])
    assert checkouts["s"].revision == "r1"
    assert modules == [sample()]
    assert sorted((p.path, p.message) for p in problems) == [
        ("gen.py", "too large (9.0 MB > 8.0 MB), generated? skipped"),
        (
            "pkg/bad.py",
            "syntax error: x; the file is not indexed (fix it, or leave it out with the "
            "source's `paths`)",
        ),
    ]


def test_load_skips_sources_whose_location_changed(tmp_path: Path) -> None:
    with Store(db_path(tmp_path)) as store:
        write_one(store, tmp_path)
        moved = SourceSpec(name="s", kind="path", location="/elsewhere")
        assert store.load([moved]) == ({}, [], [])


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(b"this is not a database at all" * 100),
        lambda path: path.write_bytes(path.read_bytes()[:1500]),
    ],
    ids=["garbage", "truncated"],
)
def test_damaged_database_is_rebuilt_with_a_notice(tmp_path: Path, damage: object) -> None:
    path = db_path(tmp_path)
    with Store(path) as store:
        write_one(store, tmp_path)
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damage(path)  # type: ignore[operator]  # damage is object-typed in the parametrize table; each is a callable
    with pytest.raises(CacheError, match="run `nnrag index`"):
        Store(path, create=False).load([spec(tmp_path)])
    with Store(path) as store:
        assert store.notices
        assert "rebuilding it" in store.notices[0]
        assert store.manifest("s") == {}


def test_foreign_and_older_databases_are_rebuilt(tmp_path: Path) -> None:
    path = db_path(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE stuff (x)")
    with Store(path) as store:
        foreign = f"nnrag: {path} is not an nnrag index of this version; rebuilding it"
        assert store.notices == [foreign]
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION - 1}")
    with Store(path) as store:
        assert store.notices == [f"nnrag: {path} is an older nnrag index; rebuilding it"]
    with Store(path) as store:
        assert store.notices == []


def test_reader_without_index(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match="no index at"):
        Store(db_path(tmp_path), create=False)
