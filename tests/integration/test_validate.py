"""Stage verdicts: each stage passes or fails with its category, and depth stops the pipeline."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.model import Stage, ValidationResult
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import validate_file
from nnrag.workspace import Workspace

pytestmark = pytest.mark.integration

IMPORTS = "import torch\nfrom torch import nn\n\n"


def block(init: str = "self.lin = nn.Linear(4, 4)", forward: str = "return self.lin(x)") -> str:
    return IMPORTS + textwrap.dedent(
        f"""
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                {init}

            def forward(self, x):
                {forward}
        """
    )


def validate(
    sandbox: Sandbox, tmp_path: Path, code: str, depth: Stage = "backward"
) -> ValidationResult:
    path = tmp_path / "block.py"
    path.write_text(code)
    return validate_file(
        path, block_id="t:block:Block", class_name="Block", depth=depth, sandbox=sandbox
    )


VERDICTS: dict[str, tuple[str, Stage, str]] = {
    "syntax": ("class Block(:\n", "parse", "syntax"),
    "compile": (IMPORTS + "return 1\n", "compile", "syntax"),
    "unresolved": (block(forward="return helper(x)"), "closed", "unresolved-name"),
    "import-raises": (block() + "\nraise RuntimeError('no')\n", "import", "runtime-error"),
    "missing-resource": (
        block() + "\nopen('weights-that-do-not-exist.bin')\n",
        "import",
        "resource-file",
    ),
    "ctor-raises": (block(init="raise ValueError('never')"), "instantiate", "ctor-args"),
    "shape": (
        block(forward="assert x.shape[-1] == 13, 'bad size'; return self.lin(x)"),
        "forward",
        "input-shape",
    ),
    "forward-raises": (block(forward="raise RuntimeError('boom')"), "forward", "runtime-error"),
    "non-finite": (block(forward="return self.lin(x) * float('nan')"), "forward", "non-finite"),
    "no-tensor": (block(forward="return 'text'"), "forward", "runtime-error"),
    "detached": (block(forward="return self.lin(x).detach()"), "backward", "runtime-error"),
    "inf-grad": (
        block(
            init="self.lin = nn.Linear(4, 4); self.w = nn.Parameter(torch.zeros(4))",
            forward="return self.lin(x) * self.w.abs().sqrt()",
        ),
        "backward",
        "runtime-error",
    ),
    # a block whose own train() takes other arguments (pyg's PGExplainer): eval() calls it
    "train-overridden": (
        block() + "\n    def train(self, model, x, edge_index):\n        return self\n",
        "forward",
        "runtime-error",
    ),
    "train-mode-raises": (
        block()
        + "\n    def train(self, mode=True):\n"
        + "        if mode:\n            raise RuntimeError('no training')\n"
        + "        return super().train(mode)\n",
        "backward",
        "runtime-error",
    ),
    "train-raises": (
        block() + "\n    def train(self, mode=True):\n        raise RuntimeError('no training')\n",
        "forward",
        "runtime-error",
    ),
}


@pytest.mark.parametrize("case", sorted(VERDICTS))
def test_verdict(sandbox: Sandbox, tmp_path: Path, case: str) -> None:
    code, stage, category = VERDICTS[case]
    result = validate(sandbox, tmp_path, code)
    assert (result.failed_stage, result.category) == (stage, category), result.message
    assert not result.passed
    assert result.message
    if stage not in {"parse"}:
        assert result.stage_reached is not None


def test_passing_block_records_timings_and_recipe(sandbox: Sandbox, tmp_path: Path) -> None:
    result = validate(sandbox, tmp_path, block())
    assert result.passed, result.message
    assert result.stage_reached == "backward"
    assert set(result.timings) >= {"parse", "compile", "closed", "import", "instantiate"}
    assert result.recipe is not None
    assert result.recipe.output_shapes


@pytest.mark.parametrize("depth", ["closed", "import", "instantiate", "forward"])
def test_depth_stops_the_pipeline(sandbox: Sandbox, tmp_path: Path, depth: Stage) -> None:
    # forward fails, so only a depth below forward can pass
    result = validate(sandbox, tmp_path, block(forward="raise RuntimeError('boom')"), depth)
    assert result.passed is (depth != "forward")
    assert result.stage_reached == (depth if depth != "forward" else "instantiate")


def test_timeout_at_instantiate(sandbox: Sandbox, tmp_path: Path) -> None:
    path = tmp_path / "slow.py"
    path.write_text(block(init="import time; time.sleep(60)"))
    result = validate_file(
        path, block_id="t:slow:Block", class_name="Block", timeout_s=2.0, sandbox=sandbox
    )
    assert (result.failed_stage, result.category) == ("instantiate", "timeout")
    assert result.message.startswith("wall-clock timeout after 2 s (--nnrag-timeout")


def test_failure_names_its_frames_in_the_block_file(sandbox: Sandbox, tmp_path: Path) -> None:
    code = (
        block(forward="return helper(x)") + "\n\ndef helper(y):\n    raise RuntimeError('deep')\n"
    )
    result = validate(sandbox, tmp_path, code)
    assert (result.failed_stage, result.category) == ("forward", "runtime-error")
    lines = code.splitlines()
    frames = [frame.split(" in ")[0] for frame in result.frames]
    path = str((tmp_path / "block.py").resolve())
    assert frames == [
        f"{path}:{lines.index('        return helper(x)') + 1}",
        f"{path}:{len(lines)}",
    ]
    assert result.frames[-1].endswith("in helper: raise RuntimeError('deep')")


def test_ctor_args_failure_says_how_to_give_hints(sandbox: Sandbox, tmp_path: Path) -> None:
    result = validate(sandbox, tmp_path, block(init="raise ValueError('never')"))
    assert result.category == "ctor-args"
    assert result.recipe is not None  # the constructor call that failed
    assert result.message.splitlines()[-1].startswith("hint: to give this block its constructor")
    assert "nnrag_block_inputs" in result.message


def test_without_a_sandbox_one_is_started(tmp_path: Path) -> None:
    path = tmp_path / "block.py"
    path.write_text(block())
    result = validate_file(path, block_id="t:block:Block", class_name="Block", depth="import")
    assert result.passed, result.message


class FakeIndex:
    def source_packages(self, source: str) -> frozenset[str]:
        return frozenset({"pkg"})


class FakeWorkspace:
    """The parts of Workspace that validate_block uses, over one hand-written block file."""

    def __init__(self, tmp_path: Path, code: str, **settings: object) -> None:
        from nnrag.model import BlockRef, Extracted, Settings

        settings.setdefault("sources", ())
        self.settings = Settings(cache_dir=tmp_path / "cache", **settings)  # type: ignore[arg-type]  # settings: test keyword arguments, typed dict[str, object]
        self.block = BlockRef(
            source="src", module="pkg.mod", name="Block", path="pkg/mod.py", line=1
        )
        self.path = tmp_path / "Block.py"
        self.path.write_text(code)
        self.extracted = Extracted(
            block=self.block,
            code=code,
            digest="sha256:" + str(hash(code)),
            requirements=(),
            files=(),
        )
        self.written = 0
        self._sandbox = None
        self._results = None
        self._plugins = None

    def find(self, query: str) -> object:
        return self.block

    def extract(self, query: object) -> object:
        return self.extracted

    def block_file(self, extracted: object) -> Path:
        self.written += 1
        return self.path

    def extraction_state(self) -> str:
        return "fake-state"

    sandbox = Workspace.sandbox
    results = Workspace.results
    plugins = Workspace.plugins
    validate = Workspace.validate
    replay = Workspace.replay
    close = Workspace.close

    def index(self) -> FakeIndex:
        return FakeIndex()


def test_workspace_validation_is_cached_until_revalidate(tmp_path: Path) -> None:
    from nnrag.validate.stages import validate_block

    workspace = FakeWorkspace(tmp_path, block())
    try:
        first = validate_block(workspace, "Block", depth="forward")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        again = validate_block(workspace, "Block", depth="forward")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        assert first.passed, first.message
        assert (first.cached, again.cached) == (False, True)
        assert workspace.written == 1
        deeper = validate_block(workspace, "Block", depth="backward")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        assert not deeper.cached
        fresh = FakeWorkspace(tmp_path, block(), revalidate=True)
        assert not validate_block(fresh, "Block", depth="forward").cached  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
    finally:
        workspace.close()


def test_the_limits_are_part_of_the_result_key(tmp_path: Path) -> None:
    """A verdict reached under one timeout or search budget is not served under another."""
    from nnrag.validate.stages import validate_block

    runs = [
        FakeWorkspace(tmp_path, block()),
        FakeWorkspace(tmp_path, block()),
        FakeWorkspace(tmp_path, block(), timeout_s=90.0),
        FakeWorkspace(tmp_path, block(), search_cpu_s=5.0),
    ]
    try:
        cached = [validate_block(w, "Block", depth="forward").cached for w in runs]  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
    finally:
        for workspace in runs:
            workspace.close()
    assert cached == [False, True, False, False]


def test_closure_problem_text_is_part_of_the_result_key(tmp_path: Path) -> None:
    """A closed failure is not served from the cache once the problem's text changes (nnrag
    now says more about it) although the block body is the same."""
    from dataclasses import replace

    from nnrag.diagnostics import diagnostic
    from nnrag.validate.stages import validate_block

    def with_problem(detail: str) -> FakeWorkspace:
        workspace = FakeWorkspace(tmp_path, block())
        problem = diagnostic("NNR501", path="pkg/mod.py", line=3, detail=detail)
        workspace.extracted = replace(workspace.extracted, problems=(problem,))
        return workspace

    first, second = with_problem("name 'x' is not defined"), with_problem("x moved to y")
    try:
        old = validate_block(first, "Block", depth="forward")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        again = validate_block(first, "Block", depth="forward")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        new = validate_block(second, "Block", depth="forward")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
    finally:
        first.close()
        second.close()
    assert (old.failed_stage, old.category) == ("closed", "unresolved-name")
    assert again.cached
    assert again.message == old.message
    assert not new.cached
    assert "x moved to y" in new.message
    assert "is not defined" not in new.message


def test_workspace_uses_config_hints(tmp_path: Path) -> None:
    from nnrag.model import BlockHints, SourceSpec
    from nnrag.validate.stages import validate_block

    code = IMPORTS + textwrap.dedent(
        """
        class Block(nn.Module):
            def __init__(self, spec):
                super().__init__()
                rows, cols = (int(v) for v in spec.split("x"))
                self.lin = nn.Linear(rows, cols)

            def forward(self, x):
                return self.lin(x)
        """
    )
    hint = BlockHints(pattern="pkg.mod:Block", init_args=("3x5",))
    source = SourceSpec(name="src", kind="path", location=str(tmp_path), hints=(hint,))
    workspace = FakeWorkspace(tmp_path, code, sources=(source,))
    try:
        result = validate_block(workspace, "Block", depth="forward")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        assert result.passed, result.message
        assert result.recipe is not None
        assert result.recipe.origin == "hinted"
        assert result.recipe.init_args == ("3x5",)
    finally:
        workspace.close()
