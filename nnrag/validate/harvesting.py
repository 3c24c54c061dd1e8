"""The harvest pass: every block of a source runs once, recording the real constructor calls
of its parts, and the harvest is frozen before any verdict uses it (the first session too)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from filelock import FileLock

from nnrag.model import BlockRef
from nnrag.validate.stages import BlockSource, complete_harvests

POLL_S = 0.5
"""How often a share waits for the other shares of the pass."""


def pending_sources(workspace: BlockSource, selected: Iterable[BlockRef]) -> list[str]:
    """Sources whose every block is in ``selected`` and whose harvest is not final yet (only a
    pass over a whole source can freeze its harvest)."""
    chosen = {block.id for block in selected}
    by_source: dict[str, list[str]] = {}
    for block in workspace.blocks():
        by_source.setdefault(block.source, []).append(block.id)
    cache = workspace.results()
    state = workspace.extraction_state()
    return sorted(
        source
        for source, ids in by_source.items()
        if all(i in chosen for i in ids) and not cache.harvest_complete(source, state)
    )


def harvest_first(
    workspace: BlockSource,
    selected: Sequence[BlockRef],
    validate: Callable[[BlockRef], object],
    *,
    share: tuple[int, int] = (0, 1),
    run_id: str = "",
    folder: Path,
    wait_s: float = 3600.0,
) -> list[str]:
    """Run this process's ``share`` (index, count) of the harvest pass, then freeze.

    ``validate`` runs one block as the session will (its results and harvest go to the
    cache, so the session's own run of a block without harvested parts is a cache hit). With
    several processes (``count`` > 1, e.g. xdist workers of one run ``run_id``), each runs
    every ``count``-th block and waits, up to ``wait_s``, for the others' marker files in
    ``folder``; a share that never finishes leaves the harvest unfrozen (verdicts then use no
    harvest, as keyed). Returns the sources frozen here.
    """
    sources = pending_sources(workspace, selected)
    if not sources:
        return []
    index, count = share
    blocks = sorted((b for b in selected if b.source in sources), key=lambda b: b.id)
    for block in blocks[index::count]:
        validate(block)
    if count > 1 and not _all_shares_done(folder, run_id, index, count, wait_s):
        return []
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / "freeze.lock")):
        return complete_harvests(workspace, [b.id for b in blocks])


def _all_shares_done(folder: Path, run_id: str, index: int, count: int, wait_s: float) -> bool:
    """Mark this share done; wait for every other share of run ``run_id``."""
    marks = folder / f"run-{run_id}"
    marks.mkdir(parents=True, exist_ok=True)
    (marks / f"share-{index}.done").touch()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if all((marks / f"share-{i}.done").exists() for i in range(count)):
            return True
        time.sleep(POLL_S)
    return False
