"""A recursive block's ``levels`` (one level of recursion) and its layer factory, on small
hand-made modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch import nn

from nnrag.recipes import recipe_to_dict
from nnrag.validate.probe.search import unsize_stand_ins
from nnrag.validate.probe.stand_ins import ShapeKeeping
from nnrag.validate.replay import differences
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
    result = probing.probe(sandbox, tmp_path, code, "Tree")
    kwargs = probing.passed_kwargs(result)
    assert kwargs["block"] == {"__ref__": "nnrag.validate.probe.stand_ins:ShapeKeeping"}
    assert result.recipe is not None
    replayed = probing.probe(sandbox, tmp_path, code, "Tree", replay=recipe_to_dict(result.recipe))
    assert differences(result, replayed) == ()


def test_a_failed_forward_unmakes_the_stand_ins_layers() -> None:
    block = nn.Sequential(ShapeKeeping(), nn.Sequential(ShapeKeeping()))
    for part in (block[0], block[1][0]):
        part.layer = nn.Linear(4, 4)  # sized by an input that then failed further on
    unsize_stand_ins(block)
    assert block[0].layer is None
    assert block[1][0].layer is None
