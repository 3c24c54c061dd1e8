"""pytester tests of --nnrag-baseline: expected failures, regressions, new passes, updating."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., list[str]]


def _write_baseline(path: Path, blocks: dict[str, dict[str, Any]]) -> None:
    path.write_text(json.dumps({"nnrag_baseline": 1, "depth": "closed", "blocks": blocks}))


def _recorded(pytester: pytest.Pytester, cli: Cli) -> dict[str, Any]:
    """Run once with --nnrag-update-baseline; return the file it wrote."""
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json", "--nnrag-update-baseline"))
    result.assert_outcomes(passed=2, failed=2)  # nothing is judged while updating
    data: dict[str, Any] = json.loads((pytester.path / "base.json").read_text())
    return data


def test_update_writes_every_outcome(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    data = _recorded(pytester, cli)
    assert data["nnrag_baseline"] == 1
    assert data["depth"] == "closed"
    assert data["blocks"] == {
        "src:<parse-errors>": {
            "outcome": "failed",
            "stage_reached": None,
            "category": "source-problem",
        },
        "src:pkg.layers:Broken": {
            "outcome": "failed",
            "stage_reached": "compile",
            "category": "unresolved-name",
        },
        "src:pkg.layers:Good": {"outcome": "passed", "stage_reached": "closed"},
        "zoo:zoo:Tiny": {"outcome": "passed", "stage_reached": "closed"},
    }
    # one block per line, so that a change is a one-line diff
    text = (pytester.path / "base.json").read_text()
    assert sum('"outcome"' in line for line in text.splitlines()) == 4


def test_expected_failures_are_xfail_and_the_run_passes(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    _recorded(pytester, cli)
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json", "--nnrag-report", "r.json"))
    result.assert_outcomes(passed=2, xfailed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "baseline *base.json: 2 as expected, 1 expected failures (xfail), 0 regressions*"
            ", 0 baseline blocks not run"
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["baseline"]["expected_failures"] == 1
    assert report["baseline"]["regressions"] == []
    # the report still tells the truth about each block
    assert report["summary"]["passed"] == 2
    assert report["summary"]["failed"] == 1


def test_a_block_failing_where_it_passed_is_a_regression(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    data = _recorded(pytester, cli)
    data["blocks"]["src:pkg.layers:Broken"] = {"outcome": "passed", "stage_reached": "closed"}
    _write_baseline(pytester.path / "base.json", data["blocks"])
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json", "--nnrag-report", "r.json"))
    result.assert_outcomes(passed=2, failed=1, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "REGRESSION: baseline: passes; now: fails after compile [unresolved-name]",
            "*src:pkg.layers:Broken did not reach closed*",
        ]
    )
    result.stdout.fnmatch_lines(["  regression: src:pkg.layers:Broken"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["baseline"]["regressions"] == ["src:pkg.layers:Broken"]


def test_failing_at_an_earlier_stage_is_a_regression(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    data = _recorded(pytester, cli)
    data["blocks"]["src:pkg.layers:Broken"]["stage_reached"] = "closed"
    _write_baseline(pytester.path / "base.json", data["blocks"])
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json"))
    result.assert_outcomes(passed=2, failed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        ["REGRESSION: baseline: fails after closed*now: fails after compile*"]
    )


def test_a_new_pass_is_reported_and_strict_fails(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    data = _recorded(pytester, cli)
    data["blocks"]["zoo:zoo:Tiny"] = {
        "outcome": "failed",
        "stage_reached": "compile",
        "category": "unresolved-name",
    }
    _write_baseline(pytester.path / "base.json", data["blocks"])
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json", "-rX"))
    result.assert_outcomes(passed=1, xfailed=2, xpassed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "  new pass: zoo:zoo:Tiny",
            "  record the new passes with --nnrag-update-baseline",
            "XPASS repos.json::zoo::zoo.Tiny - baseline: fails after compile [unresolved-name]",
        ],
        consecutive=False,
    )
    strict = pytester.runpytest(*cli("--nnrag-baseline", "base.json", "--nnrag-strict"))
    strict.assert_outcomes(passed=1, xfailed=2, failed=1)
    strict.stdout.fnmatch_lines(["*XPASS(strict)?*baseline: fails after compile*"])


def test_strict_from_the_ini_file(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    data = _recorded(pytester, cli)
    data["blocks"]["zoo:zoo:Tiny"] = {"outcome": "failed", "stage_reached": None}
    _write_baseline(pytester.path / "base.json", data["blocks"])
    pytester.makeini("[pytest]\nnnrag_baseline = base.json\nnnrag_strict = true\n")
    pytester.runpytest(*cli()).assert_outcomes(passed=1, xfailed=2, failed=1)


def test_a_new_block_that_fails_fails_the_run(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    data = _recorded(pytester, cli)
    del data["blocks"]["src:pkg.layers:Broken"]
    _write_baseline(pytester.path / "base.json", data["blocks"])
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json"))
    result.assert_outcomes(passed=2, failed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        ["NEW BLOCK FAILS: src:pkg.layers:Broken is not in the baseline*--nnrag-update-baseline*"]
    )


def test_update_keeps_blocks_that_did_not_run(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    data = _recorded(pytester, cli)
    data["blocks"]["gone:m:Old"] = {"outcome": "passed", "stage_reached": "closed"}
    _write_baseline(pytester.path / "base.json", data["blocks"])
    pytester.runpytest(
        *cli("--nnrag-baseline", "base.json", "--nnrag-update-baseline", "-k", "Good")
    )
    after = json.loads((pytester.path / "base.json").read_text())["blocks"]
    assert after == data["blocks"]


def test_update_needs_a_file(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    result = pytester.runpytest(*cli("--nnrag-update-baseline"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--nnrag-update-baseline needs the file to write*"])


def test_a_malformed_baseline_is_a_usage_error(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    (pytester.path / "base.json").write_text('{"blocks": {}}')
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*base.json: not an nnrag baseline*--nnrag-update-baseline*"])


def test_repos_json_xfail_and_skip(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    repos = json.loads(project.read_text())
    repos["sources"][0]["xfail"] = {"Broken": "needs a helper that lives upstream"}
    repos["sources"][1]["skip"] = {"zoo:Tiny": "too slow on CI"}
    project.write_text(json.dumps(repos))
    result = pytester.runpytest(*cli("-rxs"))
    result.assert_outcomes(passed=1, failed=1, xfailed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*repos.json xfail: needs a helper that lives upstream",
            "*repos.json skip: too slow on CI",
        ],
        consecutive=False,
    )


def test_repos_json_xfail_reason_must_be_text(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    repos = json.loads(project.read_text())
    repos["sources"][0]["xfail"] = {"Broken": 3}
    project.write_text(json.dumps(repos))
    result = pytester.runpytest(*cli())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*key 'xfail.Broken': must be a string, got*"])
