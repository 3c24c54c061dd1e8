"""Tests for nnrag.shard: K/N parsing, linked groups, balancing by durations."""

from __future__ import annotations

import pytest

from nnrag.errors import ConfigError
from nnrag.shard import History, assign, groups, history_from_report, parse_shard


def test_parse_shard() -> None:
    assert parse_shard("2/4") == (2, 4)
    assert parse_shard(" 1 / 1 ") == (1, 1)
    for bad in ("0/2", "3/2", "a/b", "1", "1/0"):
        with pytest.raises(ConfigError, match="expected K/N"):
            parse_shard(bad)


def test_every_source_in_exactly_one_shard() -> None:
    names = [f"s{i}" for i in range(7)]
    shards = assign(names, 3)
    assert sorted(n for shard in shards for n in shard) == sorted(names)
    assert [len(shard) for shard in shards] == [3, 2, 2]


def test_linked_sources_stay_together() -> None:
    assert groups(["a", "b", "c", "d"], [("d", "a"), ("c", "d")]) == [["a", "c", "d"], ["b"]]
    shards = assign(["a", "b", "c"], 3, History(seconds={}, links=frozenset({("c", "a")})))
    assert ["a", "c"] in shards
    assert [] in shards


def test_balanced_by_previous_durations() -> None:
    history = History(seconds={"big": 100.0, "m1": 40.0, "m2": 40.0, "small": 5.0})
    shards = assign(["small", "m1", "big", "m2"], 2, history)
    assert shards == [["big"], ["small", "m1", "m2"]]
    # a source the report does not know weighs as much as a typical one
    assert assign(["new", "big"], 2, History(seconds={"big": 10.0})) in (
        [["big"], ["new"]],
        [["new"], ["big"]],
    )


def test_history_from_report() -> None:
    report = {
        "blocks": [
            {"id": "a:m:X", "source": "a", "duration_s": 1.5, "extract_s": 0.5},
            {"id": "a:m:Y", "source": "a", "duration_s": 1.0, "linked_sources": ["b"]},
            {"id": "b:m:Z", "duration_s": 2.0},
        ]
    }
    history = history_from_report(report)
    assert history.seconds == {"a": 3.0, "b": 2.0}
    assert history.links == frozenset({("a", "b")})
