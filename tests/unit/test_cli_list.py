"""Block categories on the command line: ``nnrag list`` (column, ``--category``, JSON), specs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nnrag.cli import main
from nnrag.config import load_settings
from nnrag.workspace import Workspace

LAYERS = '''\
"""Blocks of three categories."""
import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over heads."""

    def __init__(self, dim: int, heads: int = 2) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)
        self.heads = heads

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return attn @ v


class ConvBnAct(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) * self.weight
'''

EXPECTED = {
    "src:pkg.layers:ConvBnAct": "convolution",
    "src:pkg.layers:MultiHeadAttention": "attention",
    "src:pkg.layers:RMSNorm": "normalization",
}


@pytest.fixture
def repos(tmp_path: Path) -> list[str]:
    """A path source with three blocks; the command-line options that read it."""
    package = tmp_path / "tree" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(LAYERS)
    repos = tmp_path / "repos.json"
    repos.write_text(json.dumps({"sources": [{"name": "src", "path": "tree"}]}))
    return ["--repos", str(repos), "--cache", str(tmp_path / "cache")]


def test_list_shows_category_column(repos: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", *repos]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert {row[0]: " ".join(row[1:]) for row in rows} == EXPECTED
    assert [row[0] for row in rows] == sorted(EXPECTED)


def test_list_json_has_category(repos: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", *repos, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["id"]: row["category"] for row in rows} == EXPECTED
    assert rows[0]["name"] == "ConvBnAct"


def test_list_category_filter(repos: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", *repos, "--category", "attention"]) == 0
    assert capsys.readouterr().out.split() == ["src:pkg.layers:MultiHeadAttention", "attention"]
    assert main(["list", *repos, "--category", "normalization", "*Attention"]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("command", ["list", "search"])
def test_unknown_category_is_a_command_line_error(
    repos: list[str], capsys: pytest.CaptureFixture[str], command: str
) -> None:
    words = ["x"] if command == "search" else []
    with pytest.raises(SystemExit) as stopped:
        main([command, *repos, *words, "--category", "attn"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert f"nnrag {command}: error: argument --category: unknown category 'attn'" in error
    assert "'attention'" in error
    assert "<config>" not in error


def test_list_reuses_fresh_categories_stored_by_search(
    tmp_path: Path, repos: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", *repos, "attention", "--json"]) == 0
    database = tmp_path / "cache" / "search.db"
    with sqlite3.connect(database) as db:  # a stored value nnrag would not compute
        db.execute("UPDATE blocks SET category = 'loss' WHERE name = 'RMSNorm'")
    db.close()
    capsys.readouterr()
    assert main(["list", *repos, "--category", "loss"]) == 0
    assert capsys.readouterr().out.split() == ["src:pkg.layers:RMSNorm", "loss"]
    layers = tmp_path / "tree" / "pkg" / "layers.py"
    layers.write_text(LAYERS + "# changed\n")  # the stored row is stale now: computed again
    assert main(["list", *repos, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["id"]: row["category"] for row in rows} == EXPECTED


def test_extract_and_block_file_write_the_category_into_the_spec(
    tmp_path: Path, repos: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["extract", *repos, "RMSNorm", "--out", str(out)]) == 0
    spec = json.loads((out / "RMSNorm.spec.json").read_text())
    assert spec["category"] == "normalization"
    workspace = Workspace(load_settings(Path(repos[1]), cache_dir=Path(repos[3])))
    block = workspace.find("MultiHeadAttention")
    assert workspace.category(block) == "attention"
    path = workspace.block_file(workspace.extract(block))
    spec = json.loads(path.with_name("MultiHeadAttention.spec.json").read_text())
    assert spec["category"] == "attention"


def test_categories_are_stored_per_module_and_recomputed_when_it_changes(
    tmp_path: Path, repos: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", *repos]) == 0
    files = sorted((tmp_path / "cache" / "categories").glob("*/*.json"))
    assert len(files) == 1  # one module
    stored = json.loads(files[0].read_text())
    assert stored == {
        "ConvBnAct": "convolution",
        "MultiHeadAttention": "attention",
        "RMSNorm": "normalization",
    }
    files[0].write_text(json.dumps({**stored, "RMSNorm": "loss"}))  # nnrag would not say so
    capsys.readouterr()
    assert main(["list", *repos, "--category", "loss"]) == 0
    assert capsys.readouterr().out.split() == ["src:pkg.layers:RMSNorm", "loss"]
    layers = tmp_path / "tree" / "pkg" / "layers.py"
    layers.write_text(LAYERS + "# changed\n")  # another file hash: another category file
    assert main(["list", *repos, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["id"]: row["category"] for row in rows} == EXPECTED
    assert len(list((tmp_path / "cache" / "categories").glob("*/*.json"))) == 2


def test_list_into_a_closed_pipe_stops_quietly(repos: list[str]) -> None:
    """``nnrag list | head``: the reader is gone; exit 141 as ``cat`` would, no traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first row is written
    with os.fdopen(write_end, "wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "nnrag", "list", *repos],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == 141
    assert "Traceback" not in done.stderr
