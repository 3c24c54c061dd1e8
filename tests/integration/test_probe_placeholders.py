"""A forward error from inside a placeholder (a registered class of another kind standing in
for a part the block file has no class of) names the placeholder, not the inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.integration.test_probe_documented import run_in_child
from tests.probing import TOY_REGISTRY

pytestmark = pytest.mark.integration

RECOGNIZER = (
    """
from typing import Optional

import torch
from torch import nn


"""
    + TOY_REGISTRY
    + '''

MODELS = Registry("model")


@MODELS.register_module()
class DataPreprocessor(nn.Module):
    def forward(self, data, training=False):
        return data


class Recognizer(nn.Module):
    """Its decoder's kind is registered nowhere in this file."""

    def __init__(self, decoder: dict, data_preprocessor: Optional[dict] = None):
        super().__init__()
        self.decoder = MODELS.build(decoder)
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        feat = self.conv(x)
        return self.decoder(feat, feat, feat)


class Plain(nn.Module):
    """No placeholder: its own error stays an input error."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        return self.conv(x).view(7, -1, 5)
'''
)


def test_an_error_inside_a_stand_in_of_another_kind_names_the_placeholder(
    tmp_path: Path,
) -> None:
    result = run_in_child(tmp_path, RECOGNIZER, "Recognizer")
    assert result["failed_stage"] == "forward"
    assert result["category"] == "ctor-args", result["message"]
    assert "placeholders for decoder" in result["message"]
    assert "DataPreprocessor.forward()" in result["message"]  # the error itself is kept
    assert result["recipe"]["placeholders"] == ["decoder"]


def test_a_blocks_own_error_is_not_a_placeholders(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, RECOGNIZER, "Plain")
    assert result["failed_stage"] == "forward"
    assert result["category"] != "ctor-args"
    assert "placeholders" not in result["message"]
