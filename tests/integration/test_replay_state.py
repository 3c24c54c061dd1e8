"""A block's verdict and output do not depend on memory it never filled, nor on the search's
earlier forwards: the same on every run, and its recipe replays it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from nnrag.model import ValidationResult
from nnrag.recipes import recipe_to_dict
from nnrag.validate.probe.inputs import build_inputs
from nnrag.validate.probe.outcomes import output_digest
from nnrag.validate.probe.search import unsize_stand_ins
from nnrag.validate.probe.stand_ins import ShapeKeeping
from nnrag.validate.probe.state import BuiltState
from nnrag.validate.probe.values import seed_cpu
from nnrag.validate.replay import differences
from nnrag.validate.sandbox import Sandbox
from tests.probing import validate_text as validate

pytestmark = pytest.mark.integration

UNFILLED = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, width: int = 4):
            super().__init__()
            self.weight = nn.Parameter(torch.Tensor(width))  # filled by an init_weights() later

        def forward(self, x):
            return x * self.weight
    """
)

PLAIN = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, width: int = 4):
            super().__init__()
            self.proj = nn.Linear(width, width)
            self.register_buffer("table", torch.empty(width).uniform_())

        def forward(self, x):
            return self.proj(x) * self.table
    """
)

CHANGED_BY_A_FAILED_TRY = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, width: int = 4):
            super().__init__()
            self.proj = nn.Linear(width, 3, bias=False)
            self.calls = 0

        def forward(self, x):
            with torch.no_grad():  # changed in place on every call, before anything fails
                self.proj.weight.mul_(2.0)
            self.calls += 1
            if x.dim() != 2:
                raise ValueError(f"expected a 2-D input, got {x.dim()}-D")
            return self.proj(x) * self.calls
    """
)


NAN_THEN_ANOTHER_ERROR = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(4))  # never filled

        def forward(self, x):
            if bool((x > 0).all()):  # the search's retry with positive inputs ends the search
                raise MemoryError("positive inputs take all the memory")
            return x * self.weight
    """
)


def replayed(sandbox: Sandbox, tmp_path: Path, code: str, recorded: ValidationResult) -> None:
    assert recorded.recipe is not None
    again = validate(sandbox, tmp_path, code, replay=recipe_to_dict(recorded.recipe))
    assert differences(recorded, again) == ()
    assert again.recipe is not None
    assert again.recipe.output_digest == recorded.recipe.output_digest


def fresh_digest(code: str, tmp_path: Path, result: ValidationResult) -> str:
    """The digest of one forward, outside the sandbox, on the block built from the recipe."""
    recipe = result.recipe
    assert recipe is not None
    namespace: dict[str, Any] = {}
    exec(compile(code, str(tmp_path / "fresh.py"), "exec"), namespace)  # the test's own block text
    seed_cpu(recipe.seed)
    block = namespace["Block"](**recipe.init_kwargs).eval()
    assert recipe.input_seed is not None
    args, kwargs = build_inputs(list(recipe.inputs), dict(recipe.input_kwargs), recipe.input_seed)
    with torch.no_grad():
        return output_digest(block(*args, **kwargs))


def test_memory_the_constructor_never_fills_reads_as_nan_on_every_run(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    first = validate(sandbox, tmp_path, UNFILLED)
    second = validate(sandbox, tmp_path, UNFILLED)
    assert (first.failed_stage, first.category) == ("forward", "non-finite")
    assert (second.failed_stage, second.category) == ("forward", "non-finite")
    assert first.recipe is not None
    assert second.recipe is not None
    assert first.recipe.output_digest
    assert first.recipe.output_digest == second.recipe.output_digest
    replayed(sandbox, tmp_path, UNFILLED, first)
    assert "the constructor never fills weight (uninitialized memory" in first.message


def test_a_non_finite_output_of_filled_tensors_names_none(sandbox: Sandbox, tmp_path: Path) -> None:
    code = UNFILLED.replace("torch.Tensor(width)", "torch.full((width,), float('inf'))")
    result = validate(sandbox, tmp_path, code)
    assert (result.failed_stage, result.category) == ("forward", "non-finite")
    assert "never fills" not in result.message


def test_a_non_finite_verdict_keeps_the_recipe_that_gave_it(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    recorded = validate(sandbox, tmp_path, NAN_THEN_ANOTHER_ERROR)
    assert (recorded.failed_stage, recorded.category) == ("forward", "non-finite")
    assert recorded.recipe is not None
    assert not any(isinstance(i, dict) and i.get("positive") for i in recorded.recipe.inputs)
    replayed(sandbox, tmp_path, NAN_THEN_ANOTHER_ERROR, recorded)


def test_a_block_that_fills_its_memory_gives_what_it_gives_outside_the_sandbox(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    recorded = validate(sandbox, tmp_path, PLAIN)
    assert recorded.passed, recorded.message
    assert recorded.recipe is not None
    assert recorded.recipe.output_digest == fresh_digest(PLAIN, tmp_path, recorded)
    replayed(sandbox, tmp_path, PLAIN, recorded)


def test_a_forward_after_a_try_that_changed_the_block_runs_on_the_block_as_built(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    recorded = validate(sandbox, tmp_path, CHANGED_BY_A_FAILED_TRY)
    assert recorded.passed, recorded.message
    assert recorded.recipe is not None
    assert recorded.recipe.attempts > 2  # a failed try came first
    assert recorded.recipe.output_digest == fresh_digest(
        CHANGED_BY_A_FAILED_TRY, tmp_path, recorded
    )
    replayed(sandbox, tmp_path, CHANGED_BY_A_FAILED_TRY, recorded)


class _Sizing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.keep = ShapeKeeping()
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.keep(x))


def _plain() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).eval()


def test_built_state_sees_in_place_updates_and_new_attributes_not_plain_forwards() -> None:
    block = _plain()
    state = BuiltState(block)
    with torch.no_grad():
        block(torch.randn(2, 4))  # eval: nothing of the block changes
    assert not state.changed()
    with torch.no_grad():
        block[0].weight.mul_(2.0)
    assert state.changed()

    block = _plain()
    state = BuiltState(block)
    block[1].momentum = 0.5
    assert state.changed()


def test_built_state_forgets_a_stand_in_unsized_after_a_failed_forward() -> None:
    block = _Sizing().eval()
    state = BuiltState(block)
    with pytest.raises(RuntimeError), torch.no_grad():
        block(torch.randn(2, 5))  # the stand-in sized a layer, then the norm failed
    assert state.changed()
    unsize_stand_ins(block)  # as the search does after a failed forward
    assert not state.changed()
