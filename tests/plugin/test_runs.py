"""pytester tests of whole runs: sharding and merging, an empty run, duplicate blocks."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import LAYERS

from nnrag.report import merge_reports
from tests.probing import SPEC_PART as PART

Cli = Callable[..., list[str]]
RUN_DEPENDENT = ("duration_s", "extract_s", "cached", "file")


def _stable(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what changes from run to run (timings, cache hits, file paths)."""
    blocks = [
        {k: v for k, v in entry.items() if k not in RUN_DEPENDENT} for entry in report["blocks"]
    ]
    return {"summary": report["summary"], "blocks": blocks, "depth": report["depth"]}


def _ids(pytester: pytest.Pytester, *args: str) -> list[str]:
    items, _ = pytester.inline_genitems(*args)
    return [item.nodeid for item in items]


# --------------------------------------------------------------------------- sharding


def test_shards_partition_the_run_and_merge_to_the_whole(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    whole = _ids(pytester, *cli())
    first = _ids(pytester, *cli("--nnrag-shard", "1/2"))
    second = _ids(pytester, *cli("--nnrag-shard", "2/2"))
    assert first
    assert second
    assert not set(first) & set(second)
    assert sorted(first + second) == sorted(whole)

    pytester.runpytest(*cli("--nnrag-report", "whole.json"))
    for k in (1, 2):
        result = pytester.runpytest(*cli("--nnrag-shard", f"{k}/2", "--nnrag-report", f"s{k}.json"))
        result.stdout.fnmatch_lines(["nnrag wrote *s*.json"])
    reports = {
        name: json.loads((pytester.path / name).read_text()) for name in ("s1.json", "s2.json")
    }
    assert reports["s1.json"]["shard"]["count"] == 2
    merged = merge_reports(list(reports.items()))
    unsharded = json.loads((pytester.path / "whole.json").read_text())
    assert _stable(merged) == _stable(unsharded)


def test_more_shards_than_sources_leaves_a_shard_empty_and_says_so(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    runs = [
        pytester.runpytest(*cli("--nnrag-shard", f"{k}/3", "--nnrag-report", f"{k}.json"))
        for k in (1, 2, 3)
    ]
    empty = [
        k
        for k, run in zip((1, 2, 3), runs, strict=True)
        if run.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    ]
    assert len(empty) == 1
    report = json.loads((pytester.path / f"{empty[0]}.json").read_text())
    assert report["warnings"] == [
        f"no block found: shard {empty[0]}/3 has no source (more shards than source groups)"
    ]


def test_shards_balance_by_a_previous_report(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    heavy = {
        "depth": "closed",
        "blocks": [
            {"id": "src:pkg.layers:Good", "source": "src", "duration_s": 90.0},
            {"id": "zoo:zoo:Tiny", "source": "zoo", "duration_s": 1.0, "linked_sources": ["src"]},
        ],
    }
    (pytester.path / "previous.json").write_text(json.dumps(heavy))
    first = _ids(pytester, *cli("--nnrag-shard", "1/2", "--nnrag-durations", "previous.json"))
    # zoo inlines src's code: the two stay together, so shard 1 has everything
    assert sorted(first) == sorted(_ids(pytester, *cli()))


def test_bad_shard_is_a_usage_error(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    result = pytester.runpytest(*cli("--nnrag-shard", "3/2"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--nnrag-shard '3/2': expected K/N with 1 <= K <= N*"])


# --------------------------------------------------------------------------- empty run


def test_empty_run_writes_report_and_badge_and_says_why(
    pytester: pytest.Pytester, cli: Cli
) -> None:
    pytester.mkdir("lib")
    (pytester.path / "lib/mod.py").write_text(LAYERS)
    repos = {"sources": [{"name": "lib", "path": "lib", "paths": ["nope", "missing/*.py"]}]}
    (pytester.path / "repos.json").write_text(json.dumps(repos))
    result = pytester.runpytest(*cli("--nnrag-report", "r.json", "--nnrag-badge", "b.svg"))
    result.assert_outcomes(failed=1)  # the source itself: nothing of it could be indexed
    result.stdout.fnmatch_lines(
        [
            "nnrag: NO BLOCK WAS VALIDATED: no block found in 1 source: "
            "source 'lib' (*lib): no .py files under paths ?'nope', 'missing/?.py'?*",
        ]
    )
    assert "<parse-errors>" not in result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["summary"]["blocks"] == 0
    assert "no .py files under paths ['nope', 'missing/*.py']" in report["warnings"][0]
    assert report["summary"]["unfetched_sources"] == {"lib": 1}  # counts against the rate
    assert (pytester.path / "b.svg").is_file()
    assert json.loads((pytester.path / "b.json").read_text())["message"] == "0% (0/1)"


def test_a_run_without_blocks_says_what_it_indexed(pytester: pytest.Pytester, cli: Cli) -> None:
    pytester.mkdir("lib")
    (pytester.path / "lib/mod.py").write_text("def f():\n    return 1\n")
    (pytester.path / "repos.json").write_text(json.dumps([{"name": "lib", "path": "lib"}]))
    result = pytester.runpytest(*cli("--nnrag-report", "r.json", "-n", "2"))
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "nnrag: NO BLOCK WAS VALIDATED: no block found in 1 source: no top-level "
            "nn.Module subclass with a forward in the indexed files*"
        ]
    )
    assert json.loads((pytester.path / "r.json").read_text())["summary"]["blocks"] == 0


def test_one_unmatched_paths_entry_is_a_warning_not_a_failure(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    repos = json.loads(project.read_text())
    repos["sources"][1]["paths"] = ["zoo", "zoo/nothing_here.py"]
    project.write_text(json.dumps(repos))
    result = pytester.runpytest(*cli("--nnrag-report", "r.json"))
    result.assert_outcomes(passed=2, failed=2)  # Broken and src's real parse error only
    assert "zoo::<parse-errors>" not in result.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["warnings"] == [
        "source 'zoo': 'paths' entry 'zoo/nothing_here.py' matches no .py file (a folder or file "
        "prefix, or a glob, relative to the source root)"
    ]
    result.stdout.fnmatch_lines(["warning: source 'zoo': 'paths' entry 'zoo/nothing_here.py'*"])


# --------------------------------------------------------------------------- duplicates


def test_identical_blocks_in_two_sources_are_two_report_entries(
    pytester: pytest.Pytester, cli: Cli
) -> None:
    for name in ("one", "two"):
        pytester.mkdir(name)
        pytester.mkpydir(f"{name}/pkg")
        (pytester.path / f"{name}/pkg/layers.py").write_text(LAYERS)
    repos = {"sources": [{"name": "one", "path": "one"}, {"name": "two", "path": "two"}]}
    (pytester.path / "repos.json").write_text(json.dumps(repos))
    result = pytester.runpytest(*cli("--nnrag-report", "r.json", "-n", "2"))
    result.assert_outcomes(passed=2, failed=2)
    report = json.loads((pytester.path / "r.json").read_text())
    assert [entry["id"] for entry in report["blocks"]] == [
        "one:pkg.layers:Broken",
        "one:pkg.layers:Good",
        "two:pkg.layers:Broken",
        "two:pkg.layers:Good",
    ]
    assert report["summary"]["passed"] == 2
    good = [entry for entry in report["blocks"] if entry["id"].endswith("Good")]
    assert {Path(entry["file"]).parts[-3] for entry in good} == {"one", "two"}
    assert all(entry["lines"] > 10 and entry["source_files"] == 1 for entry in good)


# --------------------------------------------------------------------------- harvest


HARVEST = (
    PART
    + """


class Whole(nn.Module):
    def __init__(self):
        super().__init__()
        self.part = Part("3x5")

    def forward(self, x):
        return self.part(x)
"""
)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_first_session_already_uses_the_harvest(
    pytester: pytest.Pytester, cli: Cli, workers: list[str]
) -> None:
    pytester.mkpydir("hv")
    (pytester.path / "hv/parts.py").write_text(HARVEST)
    (pytester.path / "repos.json").write_text(
        json.dumps({"sources": [{"name": "hv", "path": "."}]})
    )
    outcomes = []
    for session in range(2):
        result = pytester.runpytest_subprocess(
            *cli("--nnrag-report", "r.json", *workers, depth="forward")
        )
        report = json.loads((pytester.path / "r.json").read_text())
        outcomes.append({b["id"]: b["outcome"] for b in report["blocks"]})
        # the first session's pass ran them: this session's results, not cached ones
        assert [b["cached"] for b in report["blocks"]] == [session == 1] * 2
        # the pass says it is running before pytest's progress starts; frozen, it is not run
        assert ("harvest pass:" in result.stderr.str()) == (session == 0)
        # and says when it is over in each process, with how many blocks it ran there
        over = [line for line in result.stderr.lines if "harvest pass: over" in line]
        assert len(over) == (0 if session else 2 if workers else 1), over
        if session == 0:
            ran_here = sum(int(line.split("over, ")[1].split(" of ")[0]) for line in over)
            assert ran_here == 2
        result.assert_outcomes(passed=2)  # Part passes only with Whole's real call to it
    assert outcomes[0] == outcomes[1]
    assert set(outcomes[0].values()) == {"passed"}


NESTED = (
    PART
    + """


class Middle(nn.Module):
    def __init__(self, spec):
        super().__init__()
        int(spec.split("x")[0])  # only a real call builds it
        self.part = Part(spec)

    def forward(self, x):
        return self.part(x)


class Whole(nn.Module):
    def __init__(self):
        super().__init__()
        self.middle = Middle("3x5")

    def forward(self, x):
        return self.middle(x)
"""
)


def _runs_by_block(cache: Path) -> dict[str, int]:
    """How many distinct results (runs) the cache holds for each block."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(cache / "results.sqlite")) as db:
        rows = db.execute("SELECT value FROM results").fetchall()
    counts: dict[str, int] = {}
    for (value,) in rows:
        name = json.loads(value)["block_id"].rsplit(":", 1)[-1]
        counts[name] = counts.get(name, 0) + 1
    return counts


@pytest.mark.parametrize(
    "extra",
    [[], ["-n", "2"], ["--nnrag-order", "reverse"], ["-n", "2", "--nnrag-order", "reverse"]],
    ids=["serial", "xdist", "reverse", "xdist-reverse"],
)
def test_a_part_whose_containers_ran_gets_its_verdict_in_the_pass(
    pytester: pytest.Pytester, cli: Cli, extra: list[str]
) -> None:
    pytester.mkpydir("hv")
    (pytester.path / "hv/parts.py").write_text(NESTED)
    (pytester.path / "repos.json").write_text(
        json.dumps({"sources": [{"name": "hv", "path": "."}]})
    )
    result = pytester.runpytest_subprocess(
        *cli("--nnrag-report", "r.json", *extra, depth="forward")
    )
    result.assert_outcomes(passed=3)  # Middle and Part pass only with the harvested calls
    report = json.loads((pytester.path / "r.json").read_text())
    origins = {b["id"].rsplit(":", 1)[-1]: b["recipe"]["origin"] for b in report["blocks"]}
    assert origins["Part"] == origins["Middle"] == "harvested"
    # Part (a leaf: its file defines no other block's class) ran once, after Whole and
    # Middle, with its final harvest; Middle records for Part, so it runs twice, as before
    # (on xdist Part may be taken before its containers ran, rather than idle: twice too).
    runs = _runs_by_block(pytester.path / ".nnrag-cache")
    assert runs["Whole"] == 1
    assert runs["Middle"] == 2
    assert runs["Part"] == (1 if "-n" not in extra else runs["Part"])
    assert runs["Part"] in {1, 2}
