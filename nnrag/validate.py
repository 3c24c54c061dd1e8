"""Validation stages: static checks in-process, then import..backward in the sandbox."""

from __future__ import annotations

import ast
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnrag.model import STAGES, BlockHints, Category, Stage, ValidationResult, stage_index
from nnrag.results import recipe_from_dict

if TYPE_CHECKING:
    from nnrag.sandbox import Sandbox

SANDBOX_STAGES: tuple[Stage, ...] = ("import", "instantiate", "forward", "backward")
_HEADER_CODES = frozenset({"NNR010", "NNR011", "NNR012"})
"""Header well-formedness is ``nnrag check``'s business, not the code's validity."""


def static_stages(
    code: str, *, filename: str, source_packages: frozenset[str], depth: Stage
) -> tuple[Stage | None, Stage | None, Category | None, str, dict[str, float]]:
    """Run parse, compile and closed: (reached, failed stage, category, message, timings)."""
    started = time.perf_counter()
    from nnrag.checks import check_code

    findings = [
        f
        for f in check_code(code, filename=filename, source_packages=source_packages)
        if f.code not in _HEADER_CODES
    ]
    elapsed = time.perf_counter() - started
    reached: Stage | None = None
    timings: dict[str, float] = {}
    for stage in ("parse", "compile", "closed"):
        if stage_index(stage) > stage_index(depth):
            break
        timings[stage] = elapsed / 3
        failing = [f for f in findings if f.stage == stage]
        if failing:
            first = failing[0]
            message = "; ".join(f.format(filename) for f in failing[:5])
            if len(failing) > 5:
                message += f"; and {len(failing) - 5} more"
            return reached, stage, first.category, message, timings
        reached = stage
    return reached, None, None, "", timings


def hints_request(hints: BlockHints | None) -> dict[str, Any] | None:
    """The sandbox request form of user hints."""
    if hints is None:
        return None
    return {
        "init_args": list(hints.init_args),
        "init_kwargs": dict(hints.init_kwargs),
        "inputs": None if hints.inputs is None else list(hints.inputs),
        "input_kwargs": dict(hints.input_kwargs),
    }


def run_validation(
    path: Path,
    *,
    block_id: str,
    class_name: str,
    depth: Stage = "forward",
    timeout_s: float = 60.0,
    hints: BlockHints | None = None,
    source_packages: frozenset[str] = frozenset(),
    sandbox: Sandbox | None = None,
    harvested: Sequence[Mapping[str, Any]] = (),
    harvest: bool = True,
) -> tuple[ValidationResult, list[dict[str, Any]]]:
    """Validate one block file; also return the sub-block recipes harvested while it ran."""
    started = time.perf_counter()
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        result = ValidationResult(
            block_id=block_id,
            depth=depth,
            stage_reached=None,
            failed_stage="parse",
            category="syntax",
            message=f"{path}: cannot read the block file: {error}",
            file=str(path),
        )
        return result, []
    reached, failed, category, message, timings = static_stages(
        code, filename=str(path), source_packages=source_packages, depth=depth
    )
    if failed is not None or stage_index(depth) <= stage_index("closed"):
        result = ValidationResult(
            block_id=block_id,
            depth=depth,
            stage_reached=reached,
            failed_stage=failed,
            category=category,
            message=message,
            timings=timings,
            duration_s=time.perf_counter() - started,
            file=str(path),
        )
        return result, []
    request = {
        "path": str(path.resolve()),
        "class_name": class_name,
        "depth": depth,
        "timeout_s": timeout_s,
        "hints": hints_request(hints),
        "harvested": list(harvested),
        "harvest": harvest,
        "source_packages": sorted(source_packages),
        "reached": reached,
        "seed": 0,
    }
    if sandbox is None:
        from nnrag.sandbox import Sandbox

        with Sandbox() as own:
            reply = own.run(request)
    else:
        reply = sandbox.run(request)
    result = result_from_reply(
        reply, block_id=block_id, depth=depth, timings=timings, file=str(path), started=started
    )
    return result, list(reply.get("harvest") or [])


def result_from_reply(
    reply: Mapping[str, Any],
    *,
    block_id: str,
    depth: Stage,
    timings: Mapping[str, float],
    file: str,
    started: float,
) -> ValidationResult:
    """A :class:`ValidationResult` from the sandbox's reply, after the static stages."""
    reached = reply.get("stage_reached") or "closed"
    failed = reply.get("failed_stage")
    category = reply.get("category")
    if failed is None and category is not None:
        position = STAGES.index(reached) + 1
        failed = STAGES[position] if position < len(STAGES) else None
    if category is None and failed is None and reached != depth:
        category, failed = "internal-error", STAGES[STAGES.index(reached) + 1]
        reply = {**reply, "message": f"the sandbox stopped after {reached} without a verdict"}
    recipe = reply.get("recipe")
    return ValidationResult(
        block_id=block_id,
        depth=depth,
        stage_reached=reached,
        failed_stage=failed,
        category=category,
        message=str(reply.get("message") or ""),
        recipe=recipe_from_dict(recipe) if isinstance(recipe, Mapping) else None,
        timings={**timings, **(reply.get("timings") or {})},
        duration_s=time.perf_counter() - started,
        file=file,
    )


def validate_file(
    path: Path,
    *,
    block_id: str,
    class_name: str,
    depth: Stage = "forward",
    timeout_s: float = 60.0,
    hints: BlockHints | None = None,
    source_packages: frozenset[str] = frozenset(),
    sandbox: Sandbox | None = None,
) -> ValidationResult:
    """Validate one block file up to ``depth``; static stages here, the rest in the sandbox."""
    result, _ = run_validation(
        path,
        block_id=block_id,
        class_name=class_name,
        depth=depth,
        timeout_s=timeout_s,
        hints=hints,
        source_packages=source_packages,
        sandbox=sandbox,
    )
    return result


def class_names(code: str) -> list[str]:
    """Top-level class names of a file (for validating plain files)."""
    return [node.name for node in ast.parse(code).body if isinstance(node, ast.ClassDef)]


__all__ = [
    "SANDBOX_STAGES",
    "class_names",
    "result_from_reply",
    "run_validation",
    "static_stages",
    "validate_file",
]
