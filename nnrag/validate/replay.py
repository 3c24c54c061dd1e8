"""Replay: rebuild a block from its recorded recipe, rerun it, and compare the outcomes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nnrag.model import Replay, ValidationResult

if TYPE_CHECKING:
    from nnrag.model import BlockRef
    from nnrag.validate.stages import BlockSource


def differences(recorded: ValidationResult, replayed: ValidationResult) -> tuple[str, ...]:
    """What differs between a recorded result and its replay (empty: reproduced)."""
    found: list[str] = []
    for name in ("stage_reached", "failed_stage", "category"):
        before, after = getattr(recorded, name), getattr(replayed, name)
        if before != after:
            found.append(f"{name}: recorded {before}, replayed {after}")
    old, new = recorded.recipe, replayed.recipe
    if old is not None and new is not None and recorded.passed and replayed.passed:
        if list(old.output_shapes) != list(new.output_shapes):
            found.append(
                f"output shapes: recorded {old.output_shapes}, replayed {new.output_shapes}"
            )
        if old.output_digest and new.output_digest and old.output_digest != new.output_digest:
            found.append(f"output values: digest {old.output_digest} != {new.output_digest}")
    if found and not replayed.passed and replayed.message:
        found.append(f"replay: {replayed.message}")
    return tuple(found)


def replay_block(workspace: BlockSource, query: str | BlockRef) -> Replay:
    """Validate the block (from the cache when it can), then rerun exactly its recipe."""
    from nnrag.recipes import recipe_to_dict
    from nnrag.validate.stages import blame_advisory_problems, run_validation, validate_block

    block = workspace.find(query) if isinstance(query, str) else query
    recorded = validate_block(workspace, block)
    recipe = recorded.recipe
    if recipe is None:
        return Replay(
            block_id=block.id,
            recorded=recorded,
            replayed=recorded,
            differences=(
                f"no recipe recorded: the block stopped at {recorded.failed_stage} "
                f"[{recorded.category}] before a constructor call, so there is nothing to replay",
            ),
        )
    extracted = workspace.extract(block)
    path = Path(recorded.file) if recorded.file else workspace.block_file(extracted)
    if not path.is_file():
        path = workspace.block_file(extracted)
    replayed, _ = run_validation(
        path,
        block_id=block.id,
        class_name=block.name,
        depth=recorded.depth,
        timeout_s=workspace.settings.timeout_s,
        source_packages=workspace.index().source_packages(block.source),
        sandbox=workspace.sandbox(),
        harvest=False,
        plugins=workspace.plugins().child_spec(),
        replay=recipe_to_dict(recipe),
    )
    replayed = blame_advisory_problems(replayed, extracted.problems)
    return Replay(
        block_id=block.id,
        recorded=recorded,
        replayed=replayed,
        differences=differences(recorded, replayed),
    )


__all__ = ["differences", "replay_block"]
