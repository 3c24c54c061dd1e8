"""Fixtures for the pytester tests of the nnrag plugin: a small source tree and its repos.json."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

LAYERS = '''\
"""Two blocks: one closes, one reads (as its class body runs) a name that exists nowhere."""
import torch
from torch import nn

SCALE = 2.0


def helper(x):
    return x * SCALE


class Good(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return helper(self.lin(x))


class Broken(nn.Module):
    helper = undefined_helper  # read as the class body runs: the block is not closed

    def forward(self, x):
        return self.helper(x)
'''

OTHER = """\
from torch import nn


class Tiny(nn.Module):
    def forward(self, x):
        return x + 1
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """``src/pkg`` (Good, Broken, a file that does not parse), ``zoo`` (Tiny), repos.json."""
    pytester.mkdir("src")
    pytester.mkpydir("src/pkg")
    (pytester.path / "src/pkg/layers.py").write_text(LAYERS)
    (pytester.path / "src/pkg/bad.py").write_text("def broken(:\n    pass\n")
    pytester.mkdir("zoo_src")
    pytester.mkpydir("zoo_src/zoo")
    (pytester.path / "zoo_src/zoo/__init__.py").write_text(OTHER)
    repos = {
        "sources": [
            {"name": "src", "path": "src"},
            {"name": "zoo", "path": "zoo_src"},
        ]
    }
    path = pytester.path / "repos.json"
    path.write_text(json.dumps(repos, indent=2))
    return path


@pytest.fixture
def cli() -> Callable[..., list[str]]:
    """``cli(*extra, depth="closed")``: a command line for the project, cache inside the test."""

    def make(*extra: str, depth: str = "closed") -> list[str]:
        return [
            "--nnrag-repos",
            "repos.json",
            "--nnrag-cache",
            ".nnrag-cache",
            "--nnrag-depth",
            depth,
            *extra,
        ]

    return make
