"""Splitting a run across CI jobs by source (``--nnrag-shard K/N``), before anything is fetched.

Sources are the unit: a shard fetches, indexes and validates only its own sources. Sources
whose blocks inline each other's code (``linked_sources`` in a previous report) form one
group and go to one shard. Groups are balanced by the time their blocks took in a previous
report (longest first, each to the least loaded shard); without a previous report every
source weighs the same. The assignment depends only on the configuration and that report,
so every job of a matrix computes the same split.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnrag.errors import ConfigError

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """What a previous report tells the split: seconds per source, and linked sources."""

    seconds: Mapping[str, float]
    links: frozenset[tuple[str, str]] = frozenset()


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``; shards count from 1."""
    match = _SHARD.match(text)
    if match is None or not 1 <= int(match[1]) <= int(match[2]):
        raise ConfigError(
            f"--nnrag-shard {text!r}: expected K/N with 1 <= K <= N, e.g. --nnrag-shard 1/4",
            key="nnrag_shard",
        )
    return int(match[1]), int(match[2])


def history_from_report(report: Mapping[str, Any]) -> History:
    """Seconds per source (validation + extraction of its blocks) and the sources they link."""
    seconds: dict[str, float] = {}
    links: set[tuple[str, str]] = set()
    for entry in report.get("blocks") or ():
        source = str(entry.get("source") or str(entry.get("id", "")).split(":", 1)[0])
        spent = float(entry.get("duration_s") or 0.0) + float(entry.get("extract_s") or 0.0)
        seconds[source] = seconds.get(source, 0.0) + spent
        for other in entry.get("linked_sources") or ():
            links.add((source, str(other)))
    return History(seconds=seconds, links=frozenset(links))


def read_history(path: Path | None) -> History | None:
    """The history in the report at ``path``; ``None`` if there is none or it does not parse."""
    if path is None:
        return None
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return history_from_report(report) if isinstance(report, dict) else None


def groups(sources: Sequence[str], links: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Connected groups of ``sources`` (in configuration order) under ``links``."""
    parent = {name: name for name in sources}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for a, b in links:
        if a in parent and b in parent:
            parent[root(a)] = root(b)
    found: dict[str, list[str]] = {}
    for name in sources:
        found.setdefault(root(name), []).append(name)
    return list(found.values())


def assign(sources: Sequence[str], count: int, history: History | None = None) -> list[list[str]]:
    """The sources of each of ``count`` shards (index 0 is shard 1); a shard may be empty."""
    known = dict(history.seconds) if history else {}
    typical = sum(known.values()) / len(known) if known else 1.0
    weighted = [
        (sum(known.get(name, typical) for name in group), group)
        for group in groups(sources, history.links if history else ())
    ]
    order = {name: position for position, name in enumerate(sources)}
    weighted.sort(key=lambda item: (-item[0], order[item[1][0]]))
    shards: list[list[str]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for weight, group in weighted:
        target = min(range(count), key=lambda index: (loads[index], index))
        shards[target].extend(group)
        loads[target] += weight
    return [sorted(shard, key=order.__getitem__) for shard in shards]


__all__ = [
    "History",
    "assign",
    "groups",
    "history_from_report",
    "parse_shard",
    "read_history",
]
