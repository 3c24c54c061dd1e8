"""Vendoring for real: `extract --into` from a local git source, `check`, and `refresh` after
the upstream commit changed."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from nnrag.cli import main
from nnrag.report import format_diagnostic
from nnrag.vendor import MANIFEST, read_manifest

pytestmark = pytest.mark.integration

HELPERS = textwrap.dedent(
    """\
    import math

    import torch

    SCALE = math.sqrt(2.0)


    def act(x):
        return torch.relu(x) * SCALE
    """
)
LAYERS = textwrap.dedent(
    """\
    from torch import nn

    from .helpers import act


    class Block(nn.Module):
        def __init__(self, dim: int = 4):
            super().__init__()
            self.fc = nn.Linear(dim, dim)

        def forward(self, x):
            return act(self.fc(x))


    class Other(nn.Module):
        def forward(self, x):
            return x + 1
    """
)


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, text=True, capture_output=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    repo = tmp_path / "upstream"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "helpers.py").write_text(HELPERS)
    (repo / "pkg" / "layers.py").write_text(LAYERS)
    git(repo, "init", "--quiet", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "first")
    return repo


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_extract_into_check_and_refresh(
    tmp_path: Path, upstream: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos = tmp_path / "repos.json"
    repos.write_text(
        json.dumps({"sources": [{"name": "up", "git": f"file://{upstream}", "ref": "main"}]})
    )
    cache = tmp_path / "cache"
    vendor = tmp_path / "project" / "vendor"
    first = git(upstream, "rev-parse", "HEAD")

    code, out, err = run(
        capsys,
        "extract", "up:pkg.layers:Block", "up:pkg.layers:Other",
        "--into", str(vendor), "--repos", str(repos), "--cache", str(cache),
    )  # fmt: skip
    assert code == 0, out + err
    assert sorted(p.name for p in vendor.iterdir()) == [
        "Block.py",
        "Block.spec.json",
        "Other.py",
        "Other.spec.json",
        MANIFEST,
    ]
    entries = {e.id: e for e in read_manifest(vendor)}
    assert entries["up:pkg.layers:Block"].revision == first
    assert entries["up:pkg.layers:Block"].source["kind"] == "git"
    assert entries["up:pkg.layers:Block"].source["ref"] == "main"
    assert "def act(x):" in (vendor / "Block.py").read_text()

    code, out, _ = run(capsys, "check", "--pristine", str(vendor / "Block.py"))
    assert (code, out) == (0, "")

    # the user edits Other by hand; upstream changes both blocks
    other = vendor / "Other.py"
    other.write_text(other.read_text().replace("return x + 1", "return x + 2  # mine"))
    edited = other.read_text()
    (upstream / "pkg" / "helpers.py").write_text(HELPERS.replace("* SCALE", "* SCALE * 0.5"))
    (upstream / "pkg" / "layers.py").write_text(LAYERS.replace("return x + 1", "return x - 1"))
    git(upstream, "commit", "--quiet", "-am", "second")
    second = git(upstream, "rev-parse", "HEAD")

    code, out, err = run(capsys, "refresh", str(vendor), "--cache", str(cache))
    assert code == 0, out + err
    assert "updated" in out
    assert "upstream changed: +1 -1 lines in act" in out
    assert f"(revision {first} -> {second})" in out
    assert "+    return torch.relu(x) * SCALE * 0.5" in out
    assert "edited here, and upstream changed the same definitions: conflicts in Other" in out
    assert "1 updated, 0 merged, 0 unchanged, 1 skipped, 0 failed" in err
    assert "* SCALE * 0.5" in (vendor / "Block.py").read_text()
    assert other.read_text() == edited
    entries = {e.id: e for e in read_manifest(vendor)}
    assert entries["up:pkg.layers:Block"].revision == second
    assert entries["up:pkg.layers:Other"].revision == first

    code, out, _ = run(capsys, "check", "--pristine", str(vendor / "Block.py"), str(other))
    assert code == 1
    assert [line.split(": ", 1)[1].split()[0] for line in out.splitlines()] == ["NNR012"]
    assert out.startswith(f"{other}:")
    assert "changed Other (lines" in out
    assert "restore the vendored version with `nnrag refresh --force`" in out

    code, out, err = run(capsys, "refresh", str(vendor), "--cache", str(cache))
    assert code == 0
    assert "0 updated, 0 merged, 1 unchanged, 1 skipped, 0 failed" in err

    code, out, err = run(capsys, "refresh", str(vendor), "--cache", str(cache), "--force")
    assert code == 0
    assert "1 updated, 0 merged, 1 unchanged, 0 skipped, 0 failed" in err
    assert "return x - 1" in other.read_text()
    assert run(capsys, "check", "--pristine", str(vendor))[0] == 0


def test_refresh_merges_upstream_changes_into_hand_edits(
    tmp_path: Path, upstream: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos = tmp_path / "repos.json"
    repos.write_text(
        json.dumps({"sources": [{"name": "up", "git": f"file://{upstream}", "ref": "main"}]})
    )
    cache = tmp_path / "cache"
    vendor = tmp_path / "vendor"
    argv = ["extract", "up:pkg.layers:Block", "--into", str(vendor), "--repos", str(repos)]
    assert run(capsys, *argv, "--cache", str(cache))[0] == 0
    block = vendor / "Block.py"
    # the user edits the class and adds a helper; upstream changes another definition
    block.write_text(
        block.read_text()
        .replace("return act(self.fc(x))", "return act(self.fc(x)) + bias()  # mine")
        .replace("\n\n__all__", "\n\ndef bias():\n    return 0.0\n\n\n__all__")
    )
    (upstream / "pkg" / "helpers.py").write_text(HELPERS.replace("* SCALE", "* SCALE * 0.5"))
    git(upstream, "commit", "--quiet", "-am", "second")

    code, out, err = run(capsys, "refresh", str(vendor), "--cache", str(cache))
    assert code == 0, out + err
    assert "merged" in out
    assert "edited here; merged: took upstream's act, kept your edits" in out
    assert "0 updated, 1 merged, 0 unchanged, 0 skipped, 0 failed" in err
    text = block.read_text()
    assert "return torch.relu(x) * SCALE * 0.5" in text  # upstream's change
    assert "return act(self.fc(x)) + bias()  # mine" in text  # the user's edit
    assert text.index("def bias():") < text.index("__all__")
    entry = read_manifest(vendor)[0]
    assert entry.revision == git(upstream, "rev-parse", "HEAD")
    # the user's edits stay visible: --pristine names them, not upstream's change
    code, out, _ = run(capsys, "check", "--pristine", str(block))
    assert code == 1
    assert "changed Block (lines" in out
    assert "added bias" in out
    assert "act" not in out.split("changed", 1)[1]
    # nothing new upstream: the merged file stays as it is
    code, out, err = run(capsys, "refresh", str(vendor), "--cache", str(cache))
    assert "0 updated, 0 merged, 1 unchanged, 0 skipped, 0 failed" in err
    assert block.read_text() == text


def test_extract_into_refuses_a_hand_edited_file(
    tmp_path: Path, upstream: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos = tmp_path / "repos.json"
    repos.write_text(json.dumps({"sources": [{"name": "up", "path": str(upstream)}]}))
    vendor = tmp_path / "vendor"
    argv = ["extract", "Block", "--into", str(vendor), "--repos", str(repos)]
    argv += ["--cache", str(tmp_path / "cache")]
    assert run(capsys, *argv)[0] == 0
    block = vendor / "Block.py"
    block.write_text(block.read_text() + "\nEXTRA = 1\n")
    code, out, _ = run(capsys, *argv)
    assert code == 1
    assert f"{block} was edited by hand since nnrag wrote it" in out
    assert block.read_text().endswith("EXTRA = 1\n")
    assert run(capsys, *argv, "--force")[0] == 0
    assert "EXTRA" not in block.read_text()


KORNIA = Path("/work/corpora/src/kornia-0.9.0")


@pytest.mark.slow
@pytest.mark.skipif(not KORNIA.is_dir(), reason="the kornia corpus is not unpacked here")
def test_closed_real_extractions_pass_the_static_check() -> None:
    """emit and checks agree: a block that closes has no finding (a sample of kornia's)."""
    from nnrag.check.static import check_code
    from nnrag.extract.block import extract
    from nnrag.index.build import index_tree
    from nnrag.index.discover import discover_blocks

    index = index_tree(KORNIA, source="kornia")
    blocks = discover_blocks(index)
    sample = blocks[:: max(1, len(blocks) // 60)]
    checked = 0
    disagreements = []
    for block in sample:
        extracted = extract(index, block)
        if not extracted.closed:
            continue
        checked += 1
        findings = check_code(extracted.code, filename=f"{block.name}.py")
        disagreements += [f"{block.id}: {format_diagnostic(f, path='')}" for f in findings]
    assert checked >= 40
    assert disagreements == []
