"""The constructor/input search's budget: counted in the child's CPU time, named when it ends."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from nnrag.model import BlockHints, ValidationResult
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


def validate(sandbox: Sandbox, tmp_path: Path, code: str, **extra: Any) -> ValidationResult:
    """Validate ``code``'s ``Block`` to forward, searching with a budget of ``BUDGET_S``."""
    return validate_text(
        sandbox, tmp_path, code, depth="forward", harvest=False, search_cpu_s=BUDGET_S, **extra
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


def spinning_block(where: str, seconds: float | None = None) -> str:
    """A block whose constructor or forward (``where``) spins on the CPU for ``seconds``
    (``None``: for ever)."""
    spin = f"spin({seconds})"
    return textwrap.dedent(
        f"""
        import time

        import torch
        from torch import nn


        def spin(seconds):
            start = time.process_time()
            while seconds is None or time.process_time() - start < seconds:
                pass


        class Block(nn.Module):
            def __init__(self, dim: int = 4) -> None:
                super().__init__()
                self.lin = nn.Linear(dim, dim)
                {spin if where == "init" else "pass"}

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                try:
                    {spin if where == "forward" else "pass"}
                except Exception:  # the block's own handler does not swallow the interrupt
                    pass
                return self.lin(x)
        """
    )


@pytest.mark.parametrize(("where", "stage"), [("init", "instantiate"), ("forward", "forward")])
def test_an_attempt_that_outlasts_the_budget_is_stopped_there(
    sandbox: Sandbox, tmp_path: Path, where: str, stage: str
) -> None:
    # the timeout (60 s) never comes: the budget's interrupt ends the one slow attempt
    result = validate(sandbox, tmp_path, spinning_block(where), timeout_s=60.0)
    assert (result.failed_stage, result.category) == (stage, "timeout")
    assert result.message.startswith(
        f"the constructor/input search used its budget of {BUDGET_S:g} CPU seconds after "
    )
    assert f"still running when the {BUDGET_S:g} CPU seconds ran out" in result.message
    assert "wall-clock" not in result.message


def test_a_hinted_call_is_not_cut_short_by_the_budget(sandbox: Sandbox, tmp_path: Path) -> None:
    # the user's own call runs to its end (the timeout bounds it); a search would stop it
    code = spinning_block("forward", 2.5)
    searched = validate(sandbox, tmp_path, code)
    assert (searched.failed_stage, searched.category) == ("forward", "timeout")
    hints = BlockHints(pattern="Block", init_kwargs={"dim": 4}, inputs=({"shape": [2, 4]},))
    hinted = validate(sandbox, tmp_path, code, hints=hints)
    assert hinted.passed, hinted.message


def test_one_operation_that_never_returns_is_ended_just_past_the_budget(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    # sum() over a range runs in C: the budget's interrupt waits for it to return, so the
    # CPU-time limit just past the budget ends the block, long before the timeout
    code = spinning_block("forward").replace("spin(None)", "sum(range(10**15))")
    result = validate(sandbox, tmp_path, code, timeout_s=120.0)
    assert (result.stage_reached, result.failed_stage, result.category) == (
        "instantiate",
        "forward",
        "timeout",
    )
    assert result.message.startswith(
        f"the constructor/input search used its budget of {BUDGET_S:g} CPU seconds in one "
        "operation that did not return in time"
    )
    assert "wall-clock" not in result.message
