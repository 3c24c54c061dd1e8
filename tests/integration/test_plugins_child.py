"""Child hooks run in the sandbox child: nnragfile input synthesizers, built-in graph inputs."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from nnrag.model import Settings, ValidationResult
from nnrag.plugins import NNRAGFILE, child_manager, parent_plugins
from nnrag.validate.probe.graph import nnrag_input_candidates as graph_hook
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import run_validation, validate_block
from tests.integration.test_validate import FakeWorkspace

pytestmark = pytest.mark.integration

PICKY = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Picky(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(7, 2)

        def forward(self, x):
            if tuple(x.shape) != (3, 5, 7):
                raise RuntimeError("wants exactly (3, 5, 7)")
            return self.lin(x)
    """
)

SYNTHESIZER = textwrap.dedent(
    """
    import os

    PARENT = PARENT_PID


    def nnrag_input_candidates(block, params, profile, ctor):
        assert os.getpid() != PARENT, "a child hook ran in the parent"
        if type(block).__name__ != "Picky":
            return None
        return [([{"shape": [3, 5, 7], "dtype": "float32"}], {})]
    """
)


def test_builtin_child_plugins_include_graph_inputs() -> None:
    manager = child_manager({})
    names = {manager.get_name(p) for p in manager.get_plugins()}
    assert "builtin:nnrag.validate.probe.graph" in names
    assert "builtin:nnrag.validate.probe.registries" in names
    assert graph_hook in [
        impl.function for impl in manager.hook.nnrag_input_candidates.get_hookimpls()
    ]


def test_nnragfile_input_synthesizer_runs_in_the_child(sandbox: Sandbox, tmp_path: Path) -> None:
    block = tmp_path / "picky.py"
    block.write_text(PICKY)
    common = {"block_id": "t:picky:Picky", "class_name": "Picky", "depth": "forward"}
    without, _ = run_validation(block, sandbox=sandbox, **common)  # type: ignore[arg-type]  # common: a dict of keyword arguments, typed dict[str, object]
    assert (without.failed_stage, without.category) == ("forward", "runtime-error")

    (tmp_path / NNRAGFILE).write_text(SYNTHESIZER.replace("PARENT_PID", str(os.getpid())))
    (tmp_path / "repos.json").write_text('{"sources": []}')
    plugins = parent_plugins(tmp_path / "repos.json", entry_points=False)
    result, _ = run_validation(
        block,
        sandbox=sandbox,
        plugins=plugins.child_spec(),
        **common,  # type: ignore[arg-type]  # common: a dict of keyword arguments, typed dict[str, object]
    )
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.inputs == ({"shape": [3, 5, 7], "dtype": "float32"},)


def test_broken_child_plugin_fails_the_block_with_its_name(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    block = tmp_path / "picky.py"
    block.write_text(PICKY)
    result, _ = run_validation(
        block,
        block_id="t:picky:Picky",
        class_name="Picky",
        sandbox=sandbox,
        plugins={"entry_points": ["no_such_plugin_module_xyz"], "nnragfile": None},
    )
    assert (result.failed_stage, result.category) == ("import", "internal-error")
    assert "no_such_plugin_module_xyz" in result.message


def test_result_observers_and_block_inputs_in_validate_block(tmp_path: Path) -> None:
    (tmp_path / NNRAGFILE).write_text(
        textwrap.dedent(
            """
            SEEN = []

            def nnrag_block_inputs(block_id, class_name):
                return {"inputs": [{"shape": [3, 5, 7], "dtype": "float32"}]}

            def nnrag_result(block_id, result):
                SEEN.append((block_id, result.passed, result.cached))
            """
        )
    )
    (tmp_path / "repos.json").write_text('{"sources": []}')
    workspace = FakeWorkspace(
        tmp_path, PICKY.replace("Picky", "Block"), repos_file=tmp_path / "repos.json"
    )
    try:
        first: ValidationResult = validate_block(workspace, "Block")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        again = validate_block(workspace, "Block")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        assert again.cached
        assert first.passed, first.message
        assert first.recipe is not None
        assert first.recipe.origin == "hinted"
        plugin = workspace.plugins().manager.get_plugin(
            f"nnragfile:{(tmp_path / NNRAGFILE).resolve()}"
        )
        assert [(workspace.block.id, True, False), (workspace.block.id, True, True)] == plugin.SEEN
    finally:
        workspace.close()
    assert isinstance(workspace.settings, Settings)


def test_a_bad_plugin_answer_fails_only_its_block(tmp_path: Path) -> None:
    (tmp_path / NNRAGFILE).write_text(
        "def nnrag_block_inputs(block_id, class_name):\n    return {'weights': 1}\n"
    )
    (tmp_path / "repos.json").write_text('{"sources": []}')
    workspace = FakeWorkspace(tmp_path, PICKY, repos_file=tmp_path / "repos.json")
    try:
        result = validate_block(workspace, "Block")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
    finally:
        workspace.close()
    assert (result.failed_stage, result.category) == ("instantiate", "config")
    assert "nnrag_block_inputs returned {'weights': 1}" in result.message
