"""A recursive block's ``levels`` (one level of recursion) and its layer factory, on small
hand-made modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.validate.sandbox import Sandbox
from tests import probing

pytestmark = pytest.mark.integration


def test_a_tree_gets_one_level(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, levels: int, channels: int):
            super().__init__()
            # two subtrees per level: a width (32) here builds 2**32 layers and never ends
            if levels == 1:
                self.left = nn.Conv2d(channels, channels, 1)
                self.right = nn.Conv2d(channels, channels, 1)
            else:
                self.left = Block(levels - 1, channels)
                self.right = Block(levels - 1, channels)

        def forward(self, x):
            return self.left(x) + self.right(x)
    """
    kwargs = probing.passed_kwargs(probing.probe(sandbox, tmp_path, code))
    assert kwargs["levels"] == 1


def test_a_factory_whose_layers_take_a_residual_gets_shape_keeping_layers(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Tree(nn.Module):
        def __init__(self, block: type[nn.Module], channels: int):
            super().__init__()
            self.first = block(channels, channels)
            self.second = block(channels, channels)

        def forward(self, x):
            return self.second(self.first(x), x)  # a layer called with a residual beside x
    """
    kwargs = probing.passed_kwargs(probing.probe(sandbox, tmp_path, code, "Tree"))
    assert kwargs["block"] == {"__ref__": "nnrag.validate.probe.stand_ins:ShapeKeeping"}
