"""Full-text block search: an SQLite FTS5 table (bm25) kept in step with the index, per module."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnrag.errors import ConfigError
from nnrag.retrieve.categorize import BLOCK_CATEGORIES, categorize, features_from_source
from nnrag.sqlitedb import open_cache
from nnrag.versions import code_fingerprint

if TYPE_CHECKING:
    from types import TracebackType

    from nnrag.index.build import Index
    from nnrag.model import BlockRef, ModuleInfo
    from nnrag.retrieve.categorize import ClassFeatures

SCHEMA_VERSION = 2
"""Kept in the file's header (``PRAGMA user_version``) and in its ``meta`` table."""
APPLICATION_ID = 0x6E6E7273  # "nnrs": nnrag's search database

# Abbreviations common in block names, indexed with their spelled-out word so that
# "attention" finds ``ChannelAttn`` (index-side enrichment; ranking stays plain bm25).
_EXPANSIONS = {
    "attn": "attention",
    "conv": "convolution",
    "norm": "normalization",
    "bn": "batchnorm",
    "ln": "layernorm",
    "act": "activation",
    "embed": "embedding",
    "emb": "embedding",
    "pos": "position",
    "ffn": "feedforward",
    "mlp": "perceptron",
    "dw": "depthwise",
    "pw": "pointwise",
    "se": "squeeze excitation",
    "aggr": "aggregation",
    "gnn": "graph",
    "gcn": "graph convolution",
    "gat": "graph attention",
    "pool": "pooling",
    "cls": "classifier",
    "vit": "vision transformer",
    "rel": "relative",
    "qkv": "query key value",
}

# bm25 column weights, in table order: id (unindexed), name words, docstring, module words,
# constructor parameter words, category.
_WEIGHTS = (0.0, 5.0, 1.0, 1.0, 1.0, 2.0)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS modules (
    source TEXT NOT NULL, module TEXT NOT NULL, sha1 TEXT NOT NULL, blocks TEXT NOT NULL,
    PRIMARY KEY (source, module)
);
CREATE TABLE IF NOT EXISTS blocks (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, source TEXT NOT NULL,
    module TEXT NOT NULL, name TEXT NOT NULL, category TEXT NOT NULL, summary TEXT NOT NULL,
    path TEXT NOT NULL, line INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS blocks_module ON blocks (source, module);
CREATE VIRTUAL TABLE IF NOT EXISTS blocks_fts USING fts5(
    id UNINDEXED, name, docstring, module, params, category,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', '{SCHEMA_VERSION}');
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """One search result."""

    id: str
    source: str
    module: str
    name: str
    category: str
    summary: str
    """First line of the docstring ('' when there is none)."""
    path: str
    line: int
    score: float
    """bm25 relevance (higher is better)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchUpdate:
    """What one incremental update did."""

    modules: int
    """Modules whose blocks were (re)tokenized."""
    removed: int
    """Modules dropped because they left the index or have no blocks any more."""
    blocks: int
    """Blocks (re)tokenized."""
    seconds: float


# --------------------------------------------------------------------------- documents


_SEARCH_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+[a-z]?(?![a-z])|\d+")


def _split(raw: str) -> list[str]:
    """Words of an identifier for search: ``LayerNorm2d`` -> ``layer``, ``norm``, ``2d``."""
    return [word.lower() for word in _SEARCH_WORDS.findall(raw)]


def _words(text: str) -> list[str]:
    """Identifier words plus their spelled-out forms."""
    out: list[str] = []
    for raw in re.findall(r"[A-Za-z0-9]+", text):
        parts = _split(raw)
        out.extend(parts)
        if len(parts) > 1:
            out.append(raw.lower())
        out.extend(_EXPANSIONS[part] for part in parts if part in _EXPANSIONS)
    return out


def _compound_parts(text: str) -> list[str]:
    """Parts of the compound identifiers in prose (``LayerNorm`` -> ``layer``, ``norm``)."""
    out: list[str] = []
    for raw in re.findall(r"[A-Za-z0-9_]+", text):
        parts = [part for piece in raw.split("_") for part in _split(piece)]
        if len(parts) > 1:
            out.extend(parts)
    return out


def _param_names(signature: str | None) -> list[str]:
    if not signature:
        return []
    names: list[str] = []
    for piece in signature.split(","):
        name = piece.split("=", 1)[0].split(":", 1)[0].strip().lstrip("*")
        if name.isidentifier() and name not in ("self", "args", "kwargs"):
            names.append(name)
    return names


def _summary(docstring: str | None) -> str:
    for line in (docstring or "").strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _class_lines(info: ModuleInfo, name: str) -> tuple[int, int] | None:
    for unit in info.units:
        if unit.kind == "class" and any(cls.name == name for cls in unit.classes):
            return unit.start_line, unit.end_line
    return None


def _features(text: str, info: ModuleInfo, block: BlockRef) -> ClassFeatures | None:
    lines = _class_lines(info, block.name)
    if lines is None:
        return None
    return features_from_source(
        text, name=block.name, module=block.module, start_line=lines[0], end_line=lines[1]
    )


# --------------------------------------------------------------------------- queries


def fts_query(text: str, *, prefix: bool = True, any_word: bool = False) -> str | None:
    """An FTS5 MATCH expression for plain words: every word quoted (no operator survives).

    ``ChannelAttn`` becomes ``"channel" "attn"``; the last word also matches as a prefix.
    ``None`` when the text has no word at all.
    """
    words = [part for raw in re.findall(r"[A-Za-z0-9]+", text) for part in _split(raw)]
    if not words:
        return None
    quoted = [f'"{word}"' for word in words]
    if prefix:
        quoted[-1] += "*"
    return (" OR " if any_word else " ").join(quoted)


class SearchIndex:
    """The search database (``<cache>/search.db``): open, update from an index, query."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # A damaged, foreign or older file is only a cache: it is rebuilt, with a notice.
        self._db = open_cache(
            path,
            what="search database",
            schema=_SCHEMA,
            version=SCHEMA_VERSION,
            application_id=APPLICATION_ID,
        )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    # -- update ------------------------------------------------------------------------------

    def update(self, index: Index, blocks: Sequence[BlockRef]) -> SearchUpdate:
        """Bring the table in step: re-tokenize only modules whose file or block set changed."""
        started = time.perf_counter()
        by_module: dict[tuple[str, str], list[BlockRef]] = defaultdict(list)
        for block in blocks:
            by_module[block.source, block.module].append(block)
        stored = {
            (source, module): (sha1, ids)
            for source, module, sha1, ids in self._db.execute(
                "SELECT source, module, sha1, blocks FROM modules"
            )
        }
        current: dict[tuple[str, str], ModuleInfo] = {}
        for info in index.modules():
            if (info.source, info.module) in by_module:
                current[info.source, info.module] = info
        changed = [
            key
            for key, info in sorted(current.items())
            if stored.get(key) != (info.sha1, _ids(by_module[key]))
        ]
        gone = sorted(set(stored) - set(current))
        count = 0
        with self._db:
            for key in gone:
                self._delete(key)
            for key in changed:
                self._delete(key)
                info = current[key]
                text = index.text(info)
                for block in sorted(by_module[key], key=lambda b: b.id):
                    self._insert(block, text, info)
                    count += 1
                self._db.execute(
                    "INSERT INTO modules (source, module, sha1, blocks) VALUES (?, ?, ?, ?)",
                    (key[0], key[1], info.sha1, _ids(by_module[key])),
                )
        return SearchUpdate(
            modules=len(changed),
            removed=len(gone),
            blocks=count,
            seconds=time.perf_counter() - started,
        )

    def _delete(self, key: tuple[str, str]) -> None:
        rows = self._db.execute(
            "SELECT rowid FROM blocks WHERE source = ? AND module = ?", key
        ).fetchall()
        self._db.executemany("DELETE FROM blocks_fts WHERE rowid = ?", rows)
        self._db.execute("DELETE FROM blocks WHERE source = ? AND module = ?", key)
        self._db.execute("DELETE FROM modules WHERE source = ? AND module = ?", key)

    def _insert(self, block: BlockRef, text: str, info: ModuleInfo) -> None:
        features = _features(text, info, block)
        docstring = block.docstring or (features.docstring if features else "")
        category = categorize(features) if features else "utility"
        cursor = self._db.execute(
            "INSERT INTO blocks (id, source, module, name, category, summary, path, line)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                block.id,
                block.source,
                block.module,
                block.name,
                category,
                _summary(docstring),
                block.path,
                block.line,
            ),
        )
        params = _param_names(block.init_signature)
        if not params and features is not None:
            params = list(features.init_params)
        self._db.execute(
            "INSERT INTO blocks_fts (rowid, id, name, docstring, module, params, category)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                cursor.lastrowid,
                block.id,
                " ".join(_words(block.name)),
                " ".join([docstring, *_compound_parts(docstring)]),
                " ".join([block.source, *_words(block.module.replace(".", " "))]),
                " ".join(_words(" ".join(params))),
                category,
            ),
        )

    # -- queries -----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        source: str | None = None,
        category: str | None = None,
        limit: int = 10,
    ) -> list[SearchHit]:
        """Blocks matching every word of ``query`` (else any word), best bm25 first."""
        if category is not None and category not in BLOCK_CATEGORIES:
            allowed = ", ".join(BLOCK_CATEGORIES)
            raise ConfigError(
                f"unknown category {category!r}; use one of: {allowed}", key="category"
            )
        if limit < 1:
            return []
        hits = self._match(fts_query(query), source=source, category=category, limit=limit)
        if not hits:
            hits = self._match(
                fts_query(query, any_word=True), source=source, category=category, limit=limit
            )
        exact = self._exact(query, source=source, category=category, limit=limit)
        if not exact:
            return hits
        # A class named exactly as asked comes first (``nnrag search Mlp``: the class Mlp,
        # not the 37 blocks whose docstrings say "MLP" more often), scored above every hit.
        top = max((hit.score for hit in hits), default=0.0) + 1.0
        named = [replace(hit, score=top) for hit in exact]
        seen = {hit.id for hit in named}
        return [*named, *(hit for hit in hits if hit.id not in seen)][:limit]

    def _exact(
        self, query: str, *, source: str | None, category: str | None, limit: int
    ) -> list[SearchHit]:
        """Blocks whose class name (or ``module.Class``, or id) is ``query``: the exact case
        first, then other cases; shorter modules first (the class where it is defined)."""
        name = query.strip()
        if not name or any(char.isspace() for char in name):
            return []
        rows = self._db.execute(
            "SELECT b.id, b.source, b.module, b.name, b.category, b.summary, b.path, b.line"
            " FROM blocks b WHERE (b.name = ? COLLATE NOCASE OR b.id = ?"
            " OR b.module || '.' || b.name = ?)"
            " AND (? IS NULL OR b.source = ?) AND (? IS NULL OR b.category = ?)"
            " ORDER BY b.name != ?, length(b.module), b.id LIMIT ?",
            (name, name, name, source, source, category, category, name, limit),
        ).fetchall()
        return [_hit(row, score=0.0) for row in rows]

    def _match(
        self, expression: str | None, *, source: str | None, category: str | None, limit: int
    ) -> list[SearchHit]:
        if expression is None:
            return []
        weights = ", ".join(str(weight) for weight in _WEIGHTS)
        rows = self._db.execute(
            f"SELECT b.id, b.source, b.module, b.name, b.category, b.summary, b.path, b.line,"
            f" bm25(blocks_fts, {weights}) AS rank"
            " FROM blocks_fts JOIN blocks b ON b.rowid = blocks_fts.rowid"
            " WHERE blocks_fts MATCH ? AND (? IS NULL OR b.source = ?)"
            " AND (? IS NULL OR b.category = ?)"
            " ORDER BY rank, b.id LIMIT ?",
            (expression, source, source, category, category, limit),
        ).fetchall()
        return [_hit(row, score=-float(row[8])) for row in rows]

    def count(self) -> int:
        """Blocks in the table."""
        return int(self._db.execute("SELECT count(*) FROM blocks").fetchone()[0])

    def categories(self) -> dict[str, str]:
        """Block id -> category, as stored."""
        return dict(self._db.execute("SELECT id, category FROM blocks").fetchall())


def _ids(blocks: Iterable[BlockRef]) -> str:
    return "\n".join(sorted(block.id for block in blocks))


def search_path(cache_dir: Path) -> Path:
    """Where the search database lives."""
    return cache_dir / "search.db"


def stored_categories(path: Path, index: Index) -> dict[str, str]:
    """Block id -> category from the search database at ``path``, read-only.

    Only blocks of modules whose stored file hash matches ``index`` count (a stale table
    is never trusted); a missing, locked or foreign database gives ``{}``.
    """
    if not path.is_file():
        return {}
    current = {(info.source, info.module): info.sha1 for info in index.modules()}
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != str(SCHEMA_VERSION):
                return {}
            fresh = {
                (source, module)
                for source, module, sha1 in db.execute("SELECT source, module, sha1 FROM modules")
                if current.get((source, module)) == sha1
            }
            return {
                block_id: category
                for block_id, source, module, category in db.execute(
                    "SELECT id, source, module, category FROM blocks"
                )
                if (source, module) in fresh
            }
        finally:
            db.close()
    except sqlite3.Error:
        return {}


def category_cache_path(cache_dir: Path, info: ModuleInfo) -> Path:
    """The per-module category file: keyed by source, module, file hash and categorizer code."""
    key = f"{info.source}\0{info.module}\0{info.sha1}\0{code_fingerprint('retrieve/categorize.py')}"
    digest = hashlib.sha1(key.encode()).hexdigest()
    return cache_dir / "categories" / digest[:2] / f"{digest}.json"


def read_category_cache(path: Path) -> dict[str, str]:
    """Class name -> category from a category file (``{}`` when absent or unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(name): value for name, value in data.items() if isinstance(value, str)}


def write_category_cache(path: Path, categories: Mapping[str, str]) -> None:
    """Write a category file atomically (a cache: failing to write is not an error)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(dict(sorted(categories.items())), file)
        os.replace(temp, path)
    except OSError:
        Path(temp).unlink(missing_ok=True)


def search(
    index: Index,
    blocks: Sequence[BlockRef],
    query: str,
    *,
    cache_dir: Path,
    source: str | None = None,
    category: str | None = None,
    limit: int = 10,
) -> list[SearchHit]:
    """Update the search table of ``cache_dir`` from ``index`` and run one query."""
    with SearchIndex(search_path(cache_dir)) as table:
        table.update(index, blocks)
        return table.search(query, source=source, category=category, limit=limit)


def _hit(row: Sequence[Any], *, score: float) -> SearchHit:
    """A search hit from a ``blocks`` row (id, source, module, name, category, summary, path,
    line, ...)."""
    return SearchHit(
        id=row[0],
        source=row[1],
        module=row[2],
        name=row[3],
        category=row[4],
        summary=row[5],
        path=row[6],
        line=row[7],
        score=score,
    )
