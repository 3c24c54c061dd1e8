"""Another branch of the option whose ``if`` holds the failing constructor statement, on a
small hand-made module."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.validate.sandbox import Sandbox
from tests import probing

pytestmark = pytest.mark.integration


def test_the_option_takes_another_branch_of_the_chain(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class Broken(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.scale = 0.0 ** -0.5  # raises inside the part the default branch builds

        def forward(self, x):
            return x


    class Block(nn.Module):
        def __init__(self, dim: int, window: int | None = None):
            super().__init__()
            if window is None:
                self.attn = Broken(dim)
            elif window == 1:
                self.attn = nn.Linear(dim, dim)
            else:
                self.attn = nn.Identity()

        def forward(self, x):
            return self.attn(x)
    """
    assert probing.passed_kwargs(probing.probe(sandbox, tmp_path, code))["window"] == 1
