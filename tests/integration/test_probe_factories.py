"""Parameters the constructor calls: a class of the file that accepts the call, or None."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.validate.sandbox import Sandbox
from tests.probing import probe

pytestmark = pytest.mark.integration


def test_a_called_parameter_gets_the_class_of_the_file_that_accepts_the_call(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Scale(nn.Module):  # takes anything through nn.Module's (*args, **kwargs): not it
        def forward(self, x):
            return 2 * x


    class Merge(nn.Module):
        def __init__(self, resolution, dim, norm_layer=nn.LayerNorm):
            super().__init__()
            self.norm = norm_layer(dim)

        def forward(self, x):
            return self.norm(x)


    class Block(nn.Module):
        def __init__(self, dim, resolution, merge):
            super().__init__()
            self.merge = merge(resolution, dim=dim, norm_layer=nn.LayerNorm)

        def forward(self, x):
            return self.merge(x)
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.init_kwargs["merge"] == {"__ref__": "nnrag_block:Merge"}


def test_a_called_parameter_tested_against_none_gets_none(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, dim, downsample):
            super().__init__()
            self.lin = nn.Linear(dim, dim)
            if downsample is not None:  # the class is the caller's: none of this file fits
                self.down = downsample(dim, factor=2, mode="area")
            else:
                self.down = None

        def forward(self, x):
            x = self.lin(x)
            return x if self.down is None else self.down(x)
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.init_kwargs["downsample"] is None
