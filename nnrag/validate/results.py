"""The result cache: validation results and harvested recipes in SQLite (WAL) beside the index."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar, cast

from nnrag.model import Stage, ValidationResult
from nnrag.recipes import recipe_from_dict, recipe_to_dict
from nnrag.sqlitedb import open_cache

_T = TypeVar("_T")

VALIDATOR_VERSION = "3"
"""Epoch of the result format; the validator's code fingerprint is added to it."""
CacheKey = tuple[str, str, str, str]
SCHEMA_VERSION = 2  # 2: harvest_done (harvests frozen after a full pass)
APPLICATION_ID = 0x6E6E7272  # "nnrr": nnrag's result cache
_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS extractions (
    block_id TEXT NOT NULL, state TEXT NOT NULL, digest TEXT NOT NULL, file TEXT NOT NULL,
    PRIMARY KEY (block_id, state)
);
CREATE TABLE IF NOT EXISTS harvest (
    source TEXT NOT NULL, name TEXT NOT NULL, record TEXT NOT NULL,
    PRIMARY KEY (source, name, record)
);
CREATE TABLE IF NOT EXISTS harvest_done (
    source TEXT NOT NULL, state TEXT NOT NULL, PRIMARY KEY (source, state)
);
"""


@functools.cache
def torch_version() -> str:
    """Installed torch version, read from package metadata (without importing torch)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "none"


@functools.cache
def validator_version() -> str:
    """:data:`VALIDATOR_VERSION` plus a fingerprint of the validation code."""
    from nnrag.versions import VALIDATION_CODE, code_fingerprint

    return f"{VALIDATOR_VERSION}-{code_fingerprint(*VALIDATION_CODE)[:16]}"


def cache_key(digest: str, depth: Stage, *, torch: str | None = None) -> CacheKey:
    """(body digest, depth, validator version, torch version)."""
    return (digest, depth, validator_version(), torch or torch_version())


def result_to_dict(result: ValidationResult) -> dict[str, Any]:
    """A JSON-ready dict of a result (the inverse of :func:`result_from_dict`)."""
    recipe = result.recipe
    return {
        "block_id": result.block_id,
        "depth": result.depth,
        "stage_reached": result.stage_reached,
        "failed_stage": result.failed_stage,
        "category": result.category,
        "message": result.message,
        "dependency_path": list(result.dependency_path),
        "frames": list(result.frames),
        "recipe": None if recipe is None else recipe_to_dict(recipe),
        "timings": dict(result.timings),
        "duration_s": result.duration_s,
        "passed": result.passed,
        "cached": result.cached,
        "file": result.file,
        "extract_s": result.extract_s,
        "lines": result.lines,
        "source_files": result.source_files,
        "linked_sources": list(result.linked_sources),
        "notes": list(result.notes),
    }


def result_from_dict(data: Mapping[str, Any]) -> ValidationResult:
    """Rebuild a :class:`ValidationResult` from :func:`result_to_dict` output."""
    recipe = data.get("recipe")
    return ValidationResult(
        block_id=data["block_id"],
        depth=data["depth"],
        stage_reached=data.get("stage_reached"),
        failed_stage=data.get("failed_stage"),
        category=data.get("category"),
        message=data.get("message", ""),
        dependency_path=tuple(data.get("dependency_path") or ()),
        frames=tuple(data.get("frames") or ()),
        recipe=None if recipe is None else recipe_from_dict(recipe),
        timings=dict(data.get("timings") or {}),
        duration_s=float(data.get("duration_s") or 0.0),
        cached=bool(data.get("cached", False)),
        file=data.get("file"),
        extract_s=_optional(data.get("extract_s"), float),
        lines=_optional(data.get("lines"), int),
        source_files=_optional(data.get("source_files"), int),
        linked_sources=tuple(data.get("linked_sources") or ()),
        notes=tuple(str(note) for note in data.get("notes") or ()),
    )


def _optional(value: object, kind: Callable[[Any], _T]) -> _T | None:
    """``kind(value)``, or ``None`` for a missing value (results written before the field)."""
    return None if value is None else kind(value)


class ResultCache:
    """Validation results keyed by :func:`cache_key`; safe for concurrent processes (WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        # A damaged, foreign or older file is only a cache: it is rebuilt, with a notice.
        self._db = open_cache(
            path,
            what="result cache",
            schema=_SCHEMA,
            version=SCHEMA_VERSION,
            application_id=APPLICATION_ID,
        )

    def close(self) -> None:
        self._db.close()

    @staticmethod
    def _key(key: CacheKey) -> str:
        return "|".join(key)

    def get(self, key: CacheKey) -> ValidationResult | None:
        """The cached result for ``key`` (marked ``cached=True``), or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM results WHERE key = ?", (self._key(key),)
            ).fetchone()
        if row is None:
            return None
        try:
            return replace(result_from_dict(json.loads(row[0])), cached=True)
        except (ValueError, KeyError, TypeError):
            return None

    def put(self, key: CacheKey, result: ValidationResult) -> None:
        """Store ``result`` under ``key`` (last writer wins)."""
        value = json.dumps(result_to_dict(result), default=repr)
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO results (key, value) VALUES (?, ?)",
                (self._key(key), value),
            )

    def extraction(self, block_id: str, state: str) -> tuple[str, str] | None:
        """(digest, file) of the block as last extracted from the same sources and code."""
        with self._lock:
            row = self._db.execute(
                "SELECT digest, file FROM extractions WHERE block_id = ? AND state = ?",
                (block_id, state),
            ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def put_extraction(self, block_id: str, state: str, digest: str, file: str) -> None:
        """Remember what extracting ``block_id`` gave for ``state`` (see :meth:`extraction`)."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO extractions (block_id, state, digest, file) "
                "VALUES (?, ?, ?, ?)",
                (block_id, state, digest, file),
            )

    def durations(self, depth: Stage | None = None) -> dict[str, float]:
        """Block id -> seconds its latest recorded validation took (``duration_s`` plus
        ``extract_s``), over every extraction state, validator and torch the cache holds (a
        result at ``depth`` before one at another depth): what a scheduler can expect of a
        block before extracting it. Blocks never validated here are missing."""
        with self._lock:  # a result's key starts with the digest of the block it validated
            rows = self._db.execute(
                "SELECT e.block_id, r.rowid, r.value FROM extractions e JOIN results r "
                "ON r.key > e.digest AND r.key < e.digest || '~'"
            ).fetchall()
        latest: dict[str, tuple[bool, int, float]] = {}
        for block_id, rowid, value in rows:
            try:
                data = json.loads(value)
                seconds = float(data.get("duration_s") or 0.0) + float(data.get("extract_s") or 0.0)
            except (ValueError, TypeError, AttributeError):
                continue
            rank = (depth is None or data.get("depth") == depth, int(rowid), seconds)
            if block_id not in latest or rank[:2] > latest[block_id][:2]:
                latest[block_id] = rank
        return {block_id: rank[2] for block_id, rank in sorted(latest.items())}

    def export_rows(self) -> Iterator[dict[str, str]]:
        """Every result and harvested recipe as plain rows (``nnrag results export``).

        Results are content-addressed (body digest, depth, validator, torch), so they hold on
        any machine; where block files were written here (``extractions``) is not exported.
        """
        with self._lock:
            results = self._db.execute("SELECT key, value FROM results ORDER BY key").fetchall()
            harvest = self._db.execute(
                "SELECT source, name, record FROM harvest ORDER BY source, name, record"
            ).fetchall()
        for key, value in results:
            yield {"table": "results", "key": key, "value": value}
        for source, name, record in harvest:
            yield {"table": "harvest", "source": source, "name": name, "record": record}

    def import_rows(self, rows: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
        """Add exported rows; existing ones are kept. Returns (results added, rows skipped)."""
        added = skipped = 0
        with self._lock, self._db:
            for row in rows:
                table = row.get("table")
                if table == "results" and isinstance(row.get("key"), str):
                    cursor = self._db.execute(
                        "INSERT OR IGNORE INTO results (key, value) VALUES (?, ?)",
                        (row["key"], str(row.get("value", ""))),
                    )
                    added += cursor.rowcount
                    skipped += 1 - cursor.rowcount
                elif table == "harvest":
                    self._db.execute(
                        "INSERT OR IGNORE INTO harvest (source, name, record) VALUES (?, ?, ?)",
                        (str(row.get("source")), str(row.get("name")), str(row.get("record"))),
                    )
                else:
                    skipped += 1
        return added, skipped

    def harvested(self, source: str, name: str, *, limit: int = 3) -> list[dict[str, Any]]:
        """Recipes recorded for class ``name`` of ``source`` while composite blocks ran
        (always the same ones for the same table: ordered by their text)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT record FROM harvest WHERE source = ? AND name = ? ORDER BY record LIMIT ?",
                (source, name, limit),
            ).fetchall()
        return [cast(dict[str, Any], json.loads(row[0])) for row in rows]

    def harvest_complete(self, source: str, state: str) -> bool:
        """Whether every block of ``source`` ran once (for extraction ``state``), so that its
        harvest is final: from then on blocks use it and nothing is added to it."""
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM harvest_done WHERE source = ? AND state = ?", (source, state)
            ).fetchone()
        return row is not None

    def complete_harvest(self, source: str, state: str) -> None:
        """Freeze the harvest of ``source`` (see :meth:`harvest_complete`)."""
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO harvest_done (source, state) VALUES (?, ?)", (source, state)
            )

    def add_harvest(self, source: str, records: Sequence[Mapping[str, Any]]) -> None:
        """Remember harvested recipes (one row per distinct record)."""
        rows = [
            (source, str(r.get("class", "")), json.dumps(r, sort_keys=True))
            for r in records
            if r.get("class")
        ]
        if not rows:
            return
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO harvest (source, name, record) VALUES (?, ?, ?)", rows
            )


__all__ = [
    "VALIDATOR_VERSION",
    "CacheKey",
    "ResultCache",
    "cache_key",
    "result_from_dict",
    "result_to_dict",
    "torch_version",
    "validator_version",
]
