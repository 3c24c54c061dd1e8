"""The harvest pass: every block of a source runs once, recording the real constructor calls
of its parts, and the harvest is frozen before any verdict uses it (the first session too)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from nnrag.model import BlockRef
from nnrag.validate.executors import Executor, validate_many
from nnrag.validate.stages import BlockSource, complete_harvests

POLL_S = 0.5
"""How often a share waits for the other shares of the pass."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HarvestPass:
    """What a harvest pass did: the sources it froze, the blocks it ran (in any share)."""

    frozen: tuple[str, ...] = ()
    ran: frozenset[str] = frozenset()


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


def harvest_with(
    workspace: BlockSource, selected: Sequence[BlockRef], executor: Executor
) -> HarvestPass:
    """The whole harvest pass in this process, its blocks run through ``executor`` (in
    parallel, locally or on Ray), then freeze: what ``nnrag validate --all`` runs first.

    Results and harvest go to the cache, so the verdicts that follow are cache hits for blocks
    without harvested parts; nothing is reported here.
    """
    sources = pending_sources(workspace, selected)
    if not sources:
        return HarvestPass()
    blocks = sorted((b for b in selected if b.source in sources), key=lambda b: b.id)
    for _ in validate_many(workspace, blocks, executor=executor):
        pass
    frozen = complete_harvests(workspace, [b.id for b in blocks])
    return HarvestPass(frozen=tuple(frozen), ran=frozenset(b.id for b in blocks))


def harvest_first(
    workspace: BlockSource,
    selected: Sequence[BlockRef],
    validate: Callable[[BlockRef], object],
    *,
    share: tuple[int, int] = (0, 1),
    run_id: str = "",
    folder: Path,
    wait_s: float = 3600.0,
) -> HarvestPass:
    """Run this process's ``share`` (index, count) of the harvest pass, then freeze.

    ``validate`` runs one block as the session will (its results and harvest go to the
    cache, so the session's own run of a block without harvested parts is a cache hit). With
    several processes (``count`` > 1, e.g. xdist workers of one run ``run_id``), each takes
    the next block of ``selected`` not yet taken (a counter in ``folder`` shared by the run's
    processes), in the order given, until none is left: a process that finishes a block takes
    the next, so none idles while another works through a fixed share (given costliest
    first, the last blocks are the quick ones). Then each waits, up to ``wait_s``, for the
    others' marker files in ``folder``; a share that never finishes leaves the harvest
    unfrozen (verdicts then use no harvest, as keyed).
    """
    sources = pending_sources(workspace, selected)
    if not sources:
        return HarvestPass()
    index, count = share
    blocks = [b for b in selected if b.source in sources]
    mine = blocks if count <= 1 else _claimed(blocks, folder / f"run-{run_id}")
    ran_now: list[str] = []
    for block in mine:
        validate(block)
        ran_now.append(block.id)
    ran = frozenset(ran_now)
    if count > 1:
        others = _all_shares_done(folder, run_id, ran, index=index, count=count, wait_s=wait_s)
        if others is None:
            return HarvestPass(ran=ran)
        ran |= others
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / "freeze.lock")):
        frozen = complete_harvests(workspace, [b.id for b in blocks])
    return HarvestPass(frozen=tuple(frozen), ran=ran)


def _claimed(blocks: Sequence[BlockRef], marks: Path) -> Iterator[BlockRef]:
    """The blocks this process takes, one at a time, from a counter every process of the run
    shares (``marks/next``, under a file lock): each block goes to exactly one process."""
    marks.mkdir(parents=True, exist_ok=True)
    counter = marks / "next"
    while True:
        with FileLock(str(marks / "next.lock")):
            taken = int(counter.read_text() or 0) if counter.exists() else 0
            counter.write_text(str(taken + 1))
        if taken >= len(blocks):
            return
        yield blocks[taken]


def _all_shares_done(
    folder: Path, run_id: str, ran: frozenset[str], *, index: int, count: int, wait_s: float
) -> frozenset[str] | None:
    """Mark this share done (with the blocks it ran); wait for every other share of run
    ``run_id``; return the blocks all shares ran, or ``None`` when one never finished."""
    marks = folder / f"run-{run_id}"
    marks.mkdir(parents=True, exist_ok=True)
    done = marks / f"share-{index}.json"
    done.with_suffix(".tmp").write_text(json.dumps(sorted(ran)))
    done.with_suffix(".tmp").replace(done)  # whole, or not there
    deadline = time.monotonic() + wait_s
    paths = [marks / f"share-{i}.json" for i in range(count)]
    while time.monotonic() < deadline:
        if all(path.exists() for path in paths):
            return frozenset(i for path in paths for i in json.loads(path.read_text()))
        time.sleep(POLL_S)
    return None
