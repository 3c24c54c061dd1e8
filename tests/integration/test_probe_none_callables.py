"""A layer for a ``None``-defaulted parameter forward calls by the name it was stored under,
on a small hand-made module."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.validate.sandbox import Sandbox
from tests import probing

pytestmark = pytest.mark.integration

HEAD = "from typing import Any, Optional\n\nimport torch\nfrom torch import nn\n\n"


def test_a_none_default_called_by_its_stored_name_gets_a_layer(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, dim: int, shared_enc: Optional[Any] = None):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.enc = shared_enc  # not annotated as a module: only forward's call says it is one

        def forward(self, x):
            return self.proj(x) + self.enc(x, scale=2)
    """
    result = probing.probe(sandbox, tmp_path, code, head=HEAD)
    enc = probing.passed_kwargs(result)["shared_enc"]
    assert enc["__call__"] == {"__ref__": "nnrag.validate.probe.stand_ins:ShapeKeeping"}
