"""``nnrag validate --all --report/--badge``: a source that could not be fetched counts as failed
(the same report and badge as the pytest plugin's); the static stages only, no sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnrag.cli import main

LAYERS = """\
from torch import nn


class Good(nn.Module):
    def forward(self, x):
        return x


class Broken(nn.Module):
    helper = undefined_helper  # bound nowhere, read as the class body runs: not closed

    def forward(self, x):
        return self.helper(x)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``src`` (Good, Broken) and ``gone`` (a folder that does not exist) in repos.json."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NNRAG_REPOS", raising=False)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "layers.py").write_text(LAYERS)
    sources = [{"name": "src", "path": "src"}, {"name": "gone", "path": "no_such_folder"}]
    (tmp_path / "repos.json").write_text(json.dumps({"sources": sources}))
    return tmp_path


def validate(*extra: str) -> int:
    return main(["validate", "--depth", "closed", "--cache", "cache", *extra])


def test_an_unfetched_source_counts_in_the_report_and_badge(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert validate("--all", "--report", "r.json", "--badge", "b.svg") == 1
    summary = json.loads((project / "r.json").read_text())["summary"]
    assert (summary["blocks"], summary["passed"], summary["failed"]) == (2, 1, 1)
    assert summary["unfetched_sources"] == {"gone": 1}
    assert (summary["unfetched"], summary["pass_rate"]) == (1, 0.3333)
    assert json.loads((project / "b.json").read_text())["message"] == "33% (1/3)"
    assert "33% (1/3)" in (project / "b.svg").read_text()
    err = capsys.readouterr().err
    assert "source 'gone'" in err
    assert "; counted as 1 failed" in err
    assert "nnrag validate: 1 of 3 passed" in err


def test_every_source_fetched_counts_nothing_more(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "no_such_folder").mkdir()
    (project / "no_such_folder" / "tiny.py").write_text(LAYERS.replace("Good", "Tiny"))
    assert validate("--all", "--report", "r.json") == 1  # Broken fails in both sources
    summary = json.loads((project / "r.json").read_text())["summary"]
    assert (summary["blocks"], summary["passed"], summary["unfetched"]) == (4, 2, 0)
    assert summary["unfetched_sources"] == {}
    assert "counted as" not in capsys.readouterr().err


def test_named_blocks_are_judged_alone(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --all the run is about the named blocks (as pytest -k deselects the source)."""
    assert validate("src:layers:Good", "--report", "r.json") == 0
    summary = json.loads((project / "r.json").read_text())["summary"]
    assert (summary["passed"], summary["unfetched"], summary["pass_rate"]) == (1, 0, 1.0)
    assert "nnrag validate: 1 of 1 passed" in capsys.readouterr().err
