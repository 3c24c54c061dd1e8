"""Every command line of the README's "Use" section runs as written against a small local source.

The README's first code block under ``## Use`` is read as it is; each line (comments stripped)
runs in a folder holding ``repos.json`` with one local source named ``timm`` that has the
names the lines use (``timm.layers.mlp:Mlp``, attention blocks, a channel attention block).
``nnrag`` and ``pytest`` run as ``python -m ...`` of this interpreter, so the test does not
depend on console scripts being on PATH. CI runs this file as its own step (``.ci/run``).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"

MLP = '''\
"""Feed-forward layers."""
import torch
from torch import nn


class Mlp(nn.Module):
    """Two linear layers with an activation between them."""

    def __init__(self, in_features: int = 8, hidden_features: int = 16) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))
'''

ATTENTION = '''\
"""Attention layers."""
import torch
from torch import nn


class Attention(nn.Module):
    """Multi-head self attention."""

    def __init__(self, dim: int = 8, num_heads: int = 2) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).unbind(2)
        attn = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-2, -1)).softmax(-1)
        out = (attn @ v.transpose(1, 2)).transpose(1, 2).reshape(b, n, c)
        return self.proj(out)


class SEModule(nn.Module):
    """Squeeze-and-excitation: channel attention from pooled features."""

    def __init__(self, channels: int = 8, rd_channels: int = 4) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(channels, rd_channels, 1)
        self.fc2 = nn.Conv2d(rd_channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.fc2(torch.relu(self.fc1(scale))))
'''


def use_lines(text: str) -> list[str]:
    """The command lines of the first code block under ``## Use`` (comments stripped)."""
    section = re.search(r"^## Use\s*$(.*?)^## ", text, flags=re.MULTILINE | re.DOTALL)
    assert section is not None, "README.md has no '## Use' section"
    block = re.search(r"^```[a-z]*\n(.*?)^```", section.group(1), flags=re.MULTILINE | re.DOTALL)
    assert block is not None, "the Use section has no code block"
    lines = []
    for raw in block.group(1).splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _argv(line: str, cwd: Path) -> list[str]:
    words = shlex.split(line)
    expanded: list[str] = []
    for word in words:
        found = sorted(glob.glob(word, root_dir=cwd)) if glob.has_magic(word) else []
        expanded.extend(found or [word])
    program, *rest = expanded
    if program in ("nnrag", "pytest"):
        return [sys.executable, "-m", program, *rest]
    return expanded


def test_the_use_block_is_found() -> None:
    lines = use_lines(README.read_text(encoding="utf-8"))
    assert lines
    assert all(line.split()[0] in ("nnrag", "pytest") for line in lines), lines


def test_every_use_line_runs_as_written(tmp_path: Path) -> None:
    layers = tmp_path / "timm_src" / "timm" / "layers"
    layers.mkdir(parents=True)
    (tmp_path / "timm_src" / "timm" / "__init__.py").write_text("")
    (layers / "__init__.py").write_text("")
    (layers / "mlp.py").write_text(MLP)
    (layers / "attention.py").write_text(ATTENTION)
    (tmp_path / "repos.json").write_text(json.dumps([{"name": "timm", "path": "timm_src"}]))
    env = {
        **os.environ,
        "NNRAG_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join(
            [str(README.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    env.pop("NNRAG_REPOS", None)
    failures = []
    for line in use_lines(README.read_text(encoding="utf-8")):
        done = subprocess.run(
            _argv(line, tmp_path),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            failures.append(f"$ {line}\n-> exit {done.returncode}\n{done.stdout}{done.stderr}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "## Use\n\n```\nnnrag list 'a:*'   # ids\n# a comment\n\nnnrag dedup\n```\n\n## Next",
            ["nnrag list 'a:*'", "nnrag dedup"],
        ),
    ],
)
def test_use_lines_parsing(text: str, expected: list[str]) -> None:
    assert use_lines(text) == expected
