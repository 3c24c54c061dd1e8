"""The run reports every collected block (a dead xdist worker is a crash) and the sandbox layers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., list[str]]


def test_a_block_whose_worker_dies_is_a_crash(
    pytester: pytest.Pytester, project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makeconftest(
        """
        import os
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_call(item):
            if item.nodeid.endswith("::zoo.Tiny") and os.environ.get("PYTEST_XDIST_WORKER"):
                os._exit(9)  # what a killed worker looks like to the controller
        """
    )
    args = cli("-p", "no:cacheprovider", "--nnrag-report", "report.json")
    result = pytester.runpytest_subprocess(*args, "-n", "2")
    result.assert_outcomes(passed=1, failed=3)
    report = json.loads((pytester.path / "report.json").read_text())
    blocks = {b["id"]: b for b in report["blocks"]}
    assert sorted(blocks) == ["src:pkg.layers:Broken", "src:pkg.layers:Good", "zoo:zoo:Tiny"]
    assert blocks["zoo:zoo:Tiny"]["category"] == "crash"
    assert "worker" in blocks["zoo:zoo:Tiny"]["message"]
    assert report["summary"]["passed"] == 1


def test_unknown_sandbox_mode_is_a_usage_error(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    pytester.makeini("[pytest]\nnnrag_sandbox = paranoid\n")
    result = pytester.runpytest(*cli())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nnrag_sandbox = 'paranoid'*expected default or strict*"])


@pytest.mark.integration
def test_summary_and_report_name_the_sandbox_layers(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    args = cli("--nnrag-report", "r.json", "--nnrag-sandbox", "default", depth="import")
    result = pytester.runpytest_subprocess(*args)
    result.stdout.fnmatch_lines(["*nnrag summary*", "sandbox: namespaces *, seccomp *, landlock *"])
    assert result.stdout.str().count("sandbox: namespaces") == 1
    report = json.loads((pytester.path / "r.json").read_text())
    assert set(report["sandbox"]) == {"namespaces", "seccomp", "landlock"}
    assert all(isinstance(value, bool) for value in report["sandbox"].values())
