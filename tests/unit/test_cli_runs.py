"""The command line without a config, ambiguous names, and the CI commands (report, results)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnrag.cli import main
from nnrag.model import ValidationResult
from nnrag.report import build_report, write_report
from nnrag.validate.results import ResultCache, cache_key

MLP = """\
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)
"""

NEEDS_SOURCES = [
    ["index"],
    ["list"],
    ["extract", "Mlp"],
    ["extract", "Mlp", "--into", "vendor"],
    ["validate", "Mlp"],
    ["search", "mlp"],
    ["dedup"],
]


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder without repos.json, NNRAG_REPOS unset, the cache inside the test."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NNRAG_REPOS", raising=False)
    monkeypatch.setenv("NNRAG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.parametrize("command", NEEDS_SOURCES, ids=" ".join)
def test_commands_that_need_sources_say_there_are_none(
    nowhere: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"nnrag {command[0]}: error: <config>: no sources configured: no --repos FILE, " in (
        captured.err
    )
    assert "$NNRAG_REPOS" in captured.err
    assert f"./repos.json in {nowhere}" in captured.err


def test_a_config_without_sources_says_so(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (nowhere / "repos.json").write_text("[]")
    assert main(["list"]) == 2
    assert "repos.json: names no source" in capsys.readouterr().err


def _two_sources(root: Path) -> Path:
    for name in ("one", "two"):
        (root / name / "pkg").mkdir(parents=True)
        (root / name / "pkg" / "__init__.py").write_text("")
        (root / name / "pkg" / "mlp.py").write_text(MLP)
    repos = root / "repos.json"
    repos.write_text(json.dumps([{"name": "one", "path": "one"}, {"name": "two", "path": "two"}]))
    return repos


def test_extract_into_lists_the_candidates_of_an_ambiguous_name(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_sources(nowhere)
    assert main(["extract", "Mlp", "--into", "vendor"]) == 2
    error = capsys.readouterr().err
    assert "nnrag extract: error: 'Mlp' is ambiguous; use one of these block ids:" in error
    assert "one:pkg.mlp:Mlp" in error
    assert "two:pkg.mlp:Mlp" in error
    assert not (nowhere / "vendor").exists()
    assert main(["extract", "one:pkg.mlp:Mlp", "--into", "vendor"]) == 0


def test_a_command_says_which_config_it_reads(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos = _two_sources(nowhere)
    assert main(["list"]) == 0
    assert "last built from" not in capsys.readouterr().err
    other = nowhere / "other"
    other.mkdir()
    (other / "repos.json").write_text(json.dumps([{"name": "one", "path": "../one"}]))
    assert main(["list", "--repos", str(other / "repos.json")]) == 0
    error = capsys.readouterr().err
    assert f"reading {other / 'repos.json'}; the index in " in error
    assert f"was last built from {repos}" in error


# --------------------------------------------------------------------------- report, results


def _result(block_id: str, passed: bool) -> ValidationResult:
    return ValidationResult(
        block_id=block_id,
        depth="forward",
        stage_reached="forward" if passed else "import",
        failed_stage=None if passed else "instantiate",
        category=None if passed else "ctor-args",
        message="" if passed else "missing argument",
    )


def test_report_merge_and_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = build_report([_result("a:m:X", True)], depth="forward", torch_version="2")
    two = build_report([_result("b:m:Y", False)], depth="forward", torch_version="2")
    write_report(one, tmp_path / "1.json")
    write_report(two, tmp_path / "2.json")
    out, badge = tmp_path / "all.json", tmp_path / "badge.svg"
    args = ["report", "merge", str(tmp_path / "1.json"), str(tmp_path / "2.json")]
    assert main([*args, "--out", str(out), "--badge", str(badge)]) == 0
    merged = json.loads(out.read_text())
    assert [entry["id"] for entry in merged["blocks"]] == ["a:m:X", "b:m:Y"]
    assert merged["summary"]["pass_rate"] == 0.5
    assert json.loads((tmp_path / "badge.json").read_text())["message"] == "50% (1/2)"
    assert "nnrag: 1/2 blocks reached forward (50.0%)" in capsys.readouterr().out

    assert main(["report", "merge", str(tmp_path / "1.json"), str(out), "--out", "x.json"]) == 2
    assert "a:m:X is in both" in capsys.readouterr().err

    assert main(["report", "baseline", str(out), "--out", str(tmp_path / "base.json")]) == 0
    blocks = json.loads((tmp_path / "base.json").read_text())["blocks"]
    assert blocks["b:m:Y"] == {
        "outcome": "failed",
        "stage_reached": "import",
        "category": "ctor-args",
    }


@pytest.mark.parametrize("name", ["results.jsonl", "results.jsonl.gz"])
def test_results_export_import_round_trip(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = ResultCache(tmp_path / "a" / "results.sqlite")
    key = cache_key("sha256:abc", "forward")
    source.put(key, _result("a:m:X", True))
    source.add_harvest("a", [{"class": "X", "args": [1]}])
    source.close()
    file = tmp_path / name
    assert main(["results", "export", str(file), "--cache", str(tmp_path / "a")]) == 0
    assert main(["results", "import", str(file), "--cache", str(tmp_path / "b")]) == 0
    assert "1 results added" in capsys.readouterr().err
    target = ResultCache(tmp_path / "b" / "results.sqlite")
    found = target.get(key)
    assert found is not None
    assert found.passed
    assert found.block_id == "a:m:X"
    assert target.harvested("a", "X") == [{"class": "X", "args": [1]}]
    target.close()
    # importing again adds nothing and keeps what is there
    assert main(["results", "import", str(file), "--cache", str(tmp_path / "b")]) == 0
    assert "0 results added" in capsys.readouterr().err


def test_results_import_of_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["results", "import", str(tmp_path / "none.jsonl"), "--cache", str(tmp_path)]) == 2
    assert "file not found; write one with `nnrag results export FILE`" in capsys.readouterr().err
