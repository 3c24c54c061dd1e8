"""The order block tests run in: likely-slow first (recorded durations, else the index's
estimate), the same in every xdist worker."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from nnrag.index.units import analyze_module
from nnrag.model import ModuleInfo
from pytest_nnrag.schedule import block_costs, estimate, order_by_cost

Cli = Callable[..., list[str]]

MODULE = """\
import torch
from torch import nn

from .helpers import helper, other


def scale(x):
    return x * 2


class Small(nn.Module):
    def forward(self, x):
        return x


class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)

    def forward(self, x):
        return helper(other(self.b(self.a(x))), scale(torch.zeros(1)))


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.big = Big()
"""


def _ids(things: list[str], **kwargs: object) -> list[str]:
    return order_by_cost(things, str, **kwargs)  # type: ignore[arg-type]  # the keyword arguments of order_by_cost


def test_estimate_is_lines_reached_plus_names_read() -> None:
    info = analyze_module(
        source="s", module="m", path="m.py", data=MODULE.encode(), is_package=False
    )
    assert isinstance(info, ModuleInfo)
    assert estimate(info, "Small") == 3 + 10 * 1  # reads nn
    assert estimate(info, "Big") == 8 + 2 + 10 * 6  # + scale; nn helper other scale torch super
    assert estimate(info, "Wrapper") == 4 + 8 + 2 + 10 * 3  # + Big, scale; nn super Big
    assert estimate(info, "Missing") == 0.0
    assert estimate(None, "Big") == 0.0


def test_recorded_cost_wins_over_the_estimate() -> None:
    recorded = {"a": 9.0, "b": 1.0}
    estimates = {"a": 10.0, "b": 500.0}  # b looks big, but ran fast last time
    assert _ids(["b", "a"], recorded=recorded, estimates=estimates) == ["a", "b"]


def test_estimate_orders_blocks_never_run_scaled_by_those_that_ran() -> None:
    recorded = {"ran": 2.0}
    estimates = {"ran": 100.0, "huge": 1000.0, "tiny": 10.0}  # 0.02 s per unit: 20 s, 0.2 s
    assert block_costs(["ran", "huge", "tiny"], recorded=recorded, estimates=estimates) == {
        "ran": 2.0,
        "huge": 20.0,
        "tiny": 0.2,
    }
    assert _ids(["tiny", "ran", "huge"], recorded=recorded, estimates=estimates) == [
        "huge",
        "ran",
        "tiny",
    ]
    assert _ids(["tiny", "huge"], recorded={}, estimates=estimates) == ["huge", "tiny"]


def test_ties_by_name_and_the_other_orders() -> None:
    estimates = {"c": 5.0, "a": 5.0, "b": 5.0, "z": 1.0}
    things = ["z", "c", "b", "a"]
    assert _ids(things, recorded={}, estimates=estimates) == ["a", "b", "c", "z"]
    assert _ids(things, recorded={}, estimates={}) == ["a", "b", "c", "z"]
    assert _ids(things, recorded={}, estimates=estimates, order="reverse") == ["z", "c", "b", "a"]
    assert _ids(things, recorded={"z": 99.0}, estimates=estimates, order="name") == sorted(things)


def _record_durations(cache: Path, seconds: dict[str, float]) -> None:
    """Make the cached results of the blocks say they took ``seconds`` (by block id)."""
    with sqlite3.connect(cache / "results.sqlite") as db:
        for key, value in db.execute("SELECT key, value FROM results").fetchall():
            data = json.loads(value)
            data["duration_s"], data["extract_s"] = seconds[data["block_id"]], 0.0
            db.execute("UPDATE results SET value = ? WHERE key = ?", (json.dumps(data), key))


def test_a_recorded_slow_block_runs_first(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    first = pytester.runpytest(*cli("--collect-only", "-q"))
    assert first.outlines.index("repos.json::src::pkg.layers.Good") < first.outlines.index(
        "repos.json::zoo::zoo.Tiny"
    )  # no durations yet: Good's class is the larger
    pytester.runpytest(*cli())
    seconds = {"zoo:zoo:Tiny": 30.0, "src:pkg.layers:Good": 2.0, "src:pkg.layers:Broken": 1.0}
    _record_durations(pytester.path / ".nnrag-cache", seconds)
    again = pytester.runpytest(*cli("--collect-only", "-q"))
    assert again.outlines.index("repos.json::zoo::zoo.Tiny") < again.outlines.index(
        "repos.json::src::pkg.layers.Good"
    )
    by_name = pytester.runpytest(*cli("--collect-only", "-q", "--nnrag-order", "name"))
    assert by_name.outlines.index("repos.json::src::pkg.layers.Good") < by_name.outlines.index(
        "repos.json::zoo::zoo.Tiny"
    )
    # under xdist the controller reads the durations once and hands them to its workers
    xdist = pytester.runpytest_subprocess(*cli("-n", "1", "-v", "-p", "xdist"))
    ran = [line.split()[-1] for line in xdist.outlines if line.startswith("[gw0] [")]
    assert ran == [
        "repos.json::src::<parse-errors>",
        "repos.json::zoo::zoo.Tiny",
        "repos.json::src::pkg.layers.Good",
        "repos.json::src::pkg.layers.Broken",
    ]
