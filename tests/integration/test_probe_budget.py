"""The constructor/input search's budget: counted in the child's CPU time, named when it ends."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.model import ValidationResult
from nnrag.validate.sandbox import Sandbox
from tests.probing import validate_text

pytestmark = pytest.mark.integration

BUDGET_S = 1.5


def failing_block(wait: str) -> str:
    """A block whose every forward waits (``wait``) and then rejects its inputs, so the search
    goes on through its candidates until its attempt bound or its budget ends it."""
    return textwrap.dedent(
        f"""
        import time

        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim: int = 4) -> None:
                super().__init__()
                self.lin = nn.Linear(dim, dim)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                {wait}
                raise ValueError("this block never runs")
        """
    )


SPIN = "start = time.process_time()\n                while time.process_time() - start < 1.0: pass"
SLEEP = "time.sleep(0.2)"


def validate(sandbox: Sandbox, tmp_path: Path, code: str) -> ValidationResult:
    return validate_text(
        sandbox,
        tmp_path,
        code,
        depth="forward",
        harvest=False,
        search_cpu_s=BUDGET_S,
    )


def test_a_search_that_uses_its_budget_says_so(sandbox: Sandbox, tmp_path: Path) -> None:
    result = validate(sandbox, tmp_path, failing_block(SPIN))
    assert (result.failed_stage, result.category) == ("forward", "input-shape")
    assert result.message.startswith(
        f"the constructor/input search used its budget of {BUDGET_S:g} CPU seconds after "
    )
    assert "raise it with --nnrag-search-budget, nnrag validate --search-budget" in result.message
    assert "ValueError: this block never runs" in result.message


def test_the_budget_counts_cpu_time_not_waiting(sandbox: Sandbox, tmp_path: Path) -> None:
    # the same block sleeping instead of spinning: its forwards cost no CPU time, so the
    # search ends on its attempt bound (more attempts than the spinning block got)
    spun = validate(sandbox, tmp_path, failing_block(SPIN))
    slept = validate(sandbox, tmp_path, failing_block(SLEEP))
    assert (slept.failed_stage, slept.category) == ("forward", "input-shape")
    assert "budget" not in slept.message
    assert slept.message.startswith("ValueError: this block never runs")
    assert spun.recipe is not None
    assert slept.recipe is not None
    assert slept.recipe.attempts > spun.recipe.attempts
