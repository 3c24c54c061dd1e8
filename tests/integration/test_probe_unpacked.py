"""Synthesized architecture tables whose rows the block unpacks into names, on a small
hand-made module."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.validate.probe.unpacked import unpacked_names
from nnrag.validate.sandbox import Sandbox
from tests import probing

pytestmark = pytest.mark.integration


def test_table_rows_get_a_value_per_unpacked_name(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, cfgs: list[list[list[int]]]):
            super().__init__()
            layers = []
            channels = 3
            for cfg in cfgs:
                for k, exp_size, c, se_ratio, s in cfg:
                    # copies of one size would give a 32-wide kernel and stride: no input fits
                    layers.append(nn.Conv2d(channels, c, k, stride=s, padding=k // 2))
                    channels = c
            self.body = nn.Sequential(*layers)

        def forward(self, x):
            return self.body(x)
    """
    cfgs = probing.passed_kwargs(probing.probe(sandbox, tmp_path, code))["cfgs"]
    row = cfgs[0][0]
    assert len(row) == 5
    kernel, _, _, ratio, stride = row
    assert (kernel, stride) == (3, 1)
    assert isinstance(ratio, float)


def test_unpacked_names_read_tuple_targets() -> None:
    assert unpacked_names("    for k, c, s in cfg:", 3) == ["k", "c", "s"]
    assert unpacked_names("(a, b) = pair", 2) == ["a", "b"]
    assert unpacked_names("for k, c in cfg:", 3) is None
    assert unpacked_names("x = f(a, b)", 2) is None
