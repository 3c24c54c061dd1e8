"""A block class the imported file does not define here: the guard of its definition."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.validate.sandbox import Sandbox
from tests.probing import check_block

pytestmark = pytest.mark.integration

GUARDED = """
import torch
from torch import nn

HAS_ACCELERATOR = False

if HAS_ACCELERATOR:

    class Fast(nn.Module):
        def forward(self, x):
            return x

try:
    from absent_accelerator_lib import Base
except ImportError:
    Base = object


class Fallback(Base):
    def forward(self, x):
        return x


class Present(nn.Module):
    def forward(self, x):
        return x
"""


def _validate(sandbox: Sandbox, tmp_path: Path, name: str) -> tuple[str, str | None, str]:
    """Validate class ``name`` of the GUARDED file: (failed stage, category, message)."""
    path = tmp_path / "guarded.py"
    path.write_text(textwrap.dedent(GUARDED))
    result = check_block(sandbox, path, name)
    return result.failed_stage or "", result.category, result.message


def test_a_class_defined_under_a_false_guard_is_a_missing_external_naming_it(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    stage, category, message = _validate(sandbox, tmp_path, "Fast")
    assert (stage, category) == ("instantiate", "missing-external")
    assert "Fast is defined at line 9 of the block file only when `HAS_ACCELERATOR`" in message
    assert "(line 7) is true, which was not the case" in message
    assert "repos.json `exclude`" in message


def test_a_class_whose_base_is_an_import_fallback_is_a_missing_external(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    stage, category, message = _validate(sandbox, tmp_path, "Fallback")
    assert (stage, category) == ("instantiate", "missing-external")
    assert "a class with bases (object)" in message


def test_a_class_the_file_does_not_define_at_all_stays_an_internal_error(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    stage, category, message = _validate(sandbox, tmp_path, "Nowhere")
    assert (stage, category) == ("instantiate", "internal-error")
    assert "Nowhere is not an nn.Module class in the file" in message
