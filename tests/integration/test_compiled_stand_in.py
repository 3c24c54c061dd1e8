"""An absent compiled extension loaded at module level fails, as native-op, where it is called."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.extract.block import extract
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import validate_file
from tests.unit.test_cases import case_index, target_block

pytestmark = pytest.mark.integration

CASE = "emit_compiled_extension_by_name"


@pytest.mark.parametrize(
    ("name", "stage", "category"),
    [("FocalLoss", None, None), ("FusedFocalLoss", "forward", "native-op")],
)
def test_block_fails_where_it_calls_the_absent_operator(
    sandbox: Sandbox, tmp_path: Path, name: str, stage: str | None, category: str | None
) -> None:
    """The golden case's ``ext_module = load_ext("_ext", [...])`` of a source without its
    compiled ``pkg._ext``: FocalLoss's CPU path never calls it and passes forward;
    FusedFocalLoss imports and builds, then fails at forward as native-op naming the module."""
    index = case_index(CASE)
    path = tmp_path / f"{name}.py"
    path.write_text(extract(index, target_block(index, f"pkg.ops.focal:{name}")).code)
    result = validate_file(
        path,
        block_id=f"src:pkg.ops.focal:{name}",
        class_name=name,
        depth="forward",
        source_packages=frozenset({"pkg"}),
        sandbox=sandbox,
    )
    assert (result.failed_stage, result.category) == (stage, category), result.message
    if category is not None:
        assert "pkg._ext.focal_forward: compiled extension 'pkg._ext' is not installed" in (
            result.message
        )
        assert result.stage_reached == "instantiate"
    else:
        assert result.passed, result.message


@pytest.mark.parametrize("stage", ["import", "instantiate", "forward", "backward"])
def test_the_stand_in_error_is_native_op_at_every_stage(stage: str) -> None:
    """The error the stand-in raises when an operator is called is ``native-op``, also when
    the source package is the block's own (not ``source-import``)."""
    from nnrag.extract.dynimport import SHIM, shim_chunk
    from nnrag.validate.probe.outcomes import classify

    namespace: dict[str, object] = {}
    exec(compile(shim_chunk({}, ["nnrag_absent_ops"]), "<shim>", "exec"), namespace)
    shim = namespace[SHIM]
    assert callable(shim)
    with pytest.raises(ModuleNotFoundError) as called:
        shim("nnrag_absent_ops._ext").roi_align_forward()
    assert classify(called.value, stage, [], frozenset({"nnrag_absent_ops"})) == "native-op"


NATIVE_FORWARD = """
import torch
from torch import nn


def fused(x):
    raise ModuleNotFoundError(
        "pkg._ext.fused: compiled extension 'pkg._ext' is not installed", name="pkg._ext"
    )


class Block(nn.Module):
    def __init__(self, dim: int = 8, hidden: int = 16):
        super().__init__()
        self.lin = nn.Linear(dim, hidden)

    def forward(self, x):
        return fused(self.lin(x))
"""


def test_search_ends_on_an_absent_operator_and_reports_it(sandbox: Sandbox, tmp_path: Path) -> None:
    """Inputs that get through to an absent compiled operator end the input search: the block
    fails as native-op naming the operator (not with the shape error of a worse input tried
    later), after at most NATIVE_OP_TRIES constructor candidates."""
    from nnrag.validate.probe.search import NATIVE_OP_TRIES

    path = tmp_path / "block.py"
    path.write_text(NATIVE_FORWARD)
    result = validate_file(
        path, block_id="t:block:Block", class_name="Block", depth="forward", sandbox=sandbox
    )
    assert (result.failed_stage, result.category) == ("forward", "native-op"), result.message
    assert "compiled extension 'pkg._ext' is not installed" in result.message
    assert result.recipe is not None
    assert result.recipe.attempts <= NATIVE_OP_TRIES + 1
