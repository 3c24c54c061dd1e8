"""What a constructor does with a parameter: which calls build it as a registry config."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from typing import Any

from nnrag.validate.probe.usage import parameter_usage

SOURCE = """
from torch import nn


class Registry:
    def build(self, cfg):
        raise NotImplementedError


MODELS = Registry()


def build_norm_layer(cfg, num_features):
    return MODELS.build(cfg)


class Block(nn.Module):
    def __init__(self, channels, out_channels, norm_cfg, act_cfg):
        super().__init__()
        self.norm = build_norm_layer(norm_cfg, channels)
        self.act = MODELS.build(act_cfg)
        self.project = self.build_project(channels, out_channels)

    def build_project(self, in_channels, channels):
        return nn.Conv2d(in_channels, channels, 1)
"""


def _module(tmp_path: Path) -> Any:
    path = tmp_path / "usage_block.py"
    path.write_text(textwrap.dedent(SOURCE), "utf-8")
    spec = importlib.util.spec_from_file_location("usage_block", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_registry_builds_and_config_parameters_build_the_parameter(tmp_path: Path) -> None:
    block = _module(tmp_path).Block
    assert parameter_usage(block, "act_cfg")[1] == ["MODELS.build"]
    assert parameter_usage(block, "norm_cfg")[1] == ["build_norm_layer"]


def test_a_build_helper_that_takes_a_size_does_not_build_it(tmp_path: Path) -> None:
    """``self.build_project(channels, ...)`` receives ``channels`` as ``in_channels``."""
    block = _module(tmp_path).Block
    assert parameter_usage(block, "channels")[1] == []
