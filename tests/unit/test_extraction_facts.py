"""The report's extraction time is the extraction's own, however often the block is read."""

from __future__ import annotations

import json
from pathlib import Path

from nnrag.config import load_settings
from nnrag.model import BlockJob
from nnrag.validate.stages import prepare_block
from nnrag.workspace import Workspace

LAYERS = """
from torch import nn


class Scale(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(nn.init.ones_(nn.Linear(dim, 1).weight[0]))

    def forward(self, x):
        return x * self.weight
"""


def _workspace(tmp_path: Path) -> Workspace:
    package = tmp_path / "tree" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(LAYERS)
    repos = tmp_path / "repos.json"
    repos.write_text(json.dumps({"sources": [{"name": "src", "path": "tree"}]}))
    return Workspace(load_settings(repos, cache_dir=tmp_path / "cache"))


def test_an_extraction_keeps_the_seconds_it_took_through_the_memo(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    block = workspace.find("Scale")
    first = workspace.extract(block)  # e.g. the harvest pass reading which classes it defines
    assert first.seconds > 0
    job = prepare_block(workspace, block, depth="forward")
    assert isinstance(job, BlockJob)
    assert job.facts["extract_s"] == first.seconds  # not the memo read's near-zero time
    assert workspace.extract(block) is first
