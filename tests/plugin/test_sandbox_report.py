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


def _with_missing_source(project: Path) -> None:
    repos = json.loads(project.read_text())
    repos["sources"].append({"name": "gone", "path": "no_such_folder"})
    project.write_text(json.dumps(repos, indent=2))


def test_a_source_that_cannot_be_fetched_lowers_the_pass_rate_and_badge(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    _with_missing_source(project)
    args = cli("--nnrag-report", "report.json", "--nnrag-badge", "b.svg")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=2, failed=3)  # Broken, src's parse errors, gone's source error
    report = json.loads((pytester.path / "report.json").read_text())
    summary = report["summary"]
    assert (summary["blocks"], summary["passed"], summary["failed"]) == (3, 2, 1)
    assert summary["unfetched"] == 1
    assert summary["unfetched_sources"] == {"gone": 1}
    assert summary["pass_rate"] == 0.5  # 2 passed of 3 blocks + 1 unfetched source
    assert "repos.json::gone::<source-error>" in report["source_failures"]
    endpoint = json.loads((pytester.path / "b.json").read_text())
    assert endpoint["message"] == "50% (2/4)"
    assert "50% (2/4)" in (pytester.path / "b.svg").read_text()
    result.stdout.fnmatch_lines(
        [
            "nnrag: 2/4 blocks reached closed (50.0%)",
            "source 'gone' could not be fetched or read: counted as 1 failed",
        ]
    )


def test_an_unfetched_source_counts_its_blocks_in_the_baseline(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json", "--nnrag-update-baseline"))
    result.assert_outcomes(passed=2, failed=2)
    repos = json.loads(project.read_text())
    repos["sources"][0]["path"] = "no_such_folder"  # src (2 blocks in the baseline) is gone
    project.write_text(json.dumps(repos, indent=2))
    result = pytester.runpytest(*cli("--nnrag-baseline", "base.json", "--nnrag-report", "r.json"))
    summary = json.loads((pytester.path / "r.json").read_text())["summary"]
    assert summary["unfetched_sources"] == {"src": 2}
    assert (summary["blocks"], summary["passed"], summary["pass_rate"]) == (1, 1, 0.3333)


PROBING = """\
import socket

from torch import nn

try:  # what urllib3 does at import to learn whether the machine has IPv6
    socket.socket(socket.AF_INET6).bind(("::1", 0))
    HAS_IPV6 = True
except Exception:
    HAS_IPV6 = False


class Tiny(nn.Module):
    def forward(self, x):
        return x + 1 if HAS_IPV6 else x - 1
"""
PROBE_NOTE = (
    "refused: socket.__new__ (family AF_INET6; only unix sockets are allowed) "
    "(the block handled the refusal)"
)


@pytest.mark.integration
def test_a_handled_probe_passes_with_its_note_in_summary_output_and_report(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    (pytester.path / "zoo_src/zoo/__init__.py").write_text(PROBING)
    args = cli("--nnrag-report", "r.json", "-k", "Tiny", "-rP", "-v", depth="import")
    result = pytester.runpytest_subprocess(*args, "--junitxml", "junit.xml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*::zoo::zoo.Tiny PASSED*",
            "*- Captured nnrag notes call -*",
            PROBE_NOTE,
            "*nnrag summary*",
            "notes: 1 block handled a refused probe",
            f"  zoo:zoo:Tiny: {PROBE_NOTE}",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    (entry,) = report["blocks"]
    assert (entry["id"], entry["outcome"]) == ("zoo:zoo:Tiny", "passed")
    assert entry["notes"] == [PROBE_NOTE]
    assert report["summary"]["noted"] == 1
    assert f'name="nnrag_notes" value="{PROBE_NOTE}"' in (pytester.path / "junit.xml").read_text()
