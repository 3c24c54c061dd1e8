"""The harvest pass: every block of a source runs once, recording the real constructor calls
of its parts, and the harvest is frozen before any verdict uses it (the first session too).

A record of class ``X`` can only come from a block whose file defines a class ``X`` (its
*container*): so once every container of ``X`` ran, ``X``'s harvest is final. A block whose
file defines no class named like another block of its source (a *leaf*) records nothing a
verdict reads; a leaf whose containers all ran gets its final verdict in the pass (the job
:func:`~nnrag.validate.stages.prepare_block` makes after the freeze, same key), instead of a
recording run now and a second run after the freeze. Other blocks run as they always did
(without recipes, recording), so the harvest and every verdict are the same whatever the
order and the number of processes; only how many blocks run twice changes. A container
keeps the verdict of its recording run when it passed; only one that failed runs again after
the freeze, with its harvested recipes (``nnrag.validate.containers``).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from nnrag.errors import ExtractionError, InternalError
from nnrag.model import BlockRef
from nnrag.validate.containers import defined_classes
from nnrag.validate.executors import Executor, validate_many
from nnrag.validate.stages import BlockSource, complete_harvests

POLL_S = 0.5
"""How often a share waits for the other shares of the pass."""
LOOKAHEAD = 8
"""How many ready blocks, in order, a process looks at for one it extracted itself (its
memo holds it: the other process would extract it again)."""


@dataclass(frozen=True, slots=True)
class HarvestOrder:
    """Which blocks of the pass can record the class of which others (see the module)."""

    containers: Mapping[str, frozenset[str]]
    """Block id -> ids of the other blocks of its source whose files define a class of its
    name: only their runs can record its class."""
    leaves: frozenset[str]
    """Ids of the blocks whose files define no class named like another block of their
    source: what they record no verdict reads."""

    def ready(self, block_id: str, done: Collection[str]) -> bool:
        """Whether running the block now loses nothing: it is no leaf (it runs recording,
        as always), or every container of it ran (its run is its verdict)."""
        return block_id not in self.leaves or self.final(block_id, done)

    def final(self, block_id: str, done: Collection[str]) -> bool:
        """Whether a run of the block now is its verdict: a leaf whose containers all ran
        (``done``: ids of blocks whose runs finished, their records stored)."""
        return block_id in self.leaves and all(c in done for c in self.containers.get(block_id, ()))


def harvest_order(
    blocks: Sequence[BlockRef], defines: Mapping[str, frozenset[str]]
) -> HarvestOrder:
    """The :class:`HarvestOrder` of ``blocks``, given the classes each one's file defines
    (``defines``, by id; a block missing there defines none)."""
    named: dict[tuple[str, str], list[str]] = {}
    for block in blocks:
        named.setdefault((block.source, block.name), []).append(block.id)
    containers: dict[str, set[str]] = {}
    holders: set[str] = set()
    for block in blocks:
        for name in defines.get(block.id, frozenset()):
            for part in named.get((block.source, name), ()):
                if part != block.id:
                    containers.setdefault(part, set()).add(block.id)
                    holders.add(block.id)
    return HarvestOrder(
        containers={i: frozenset(ids) for i, ids in sorted(containers.items())},
        leaves=frozenset(b.id for b in blocks if b.id not in holders),
    )


def block_defines(workspace: BlockSource, block: BlockRef) -> frozenset[str]:
    """The classes ``block``'s file defines (extracted as its run will be: the workspace
    memoizes it); none when it cannot be extracted (its run then fails before the sandbox)."""
    try:
        return defined_classes(workspace.extract(block).code)
    except (ExtractionError, InternalError):
        return frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class HarvestPass:
    """What a harvest pass did: the sources it froze, the blocks it ran (in any share)."""

    frozen: tuple[str, ...] = ()
    ran: frozenset[str] = frozenset()
    ran_here: int = 0
    """How many of them this process ran."""
    waited_s: float = 0.0
    """Seconds this process waited for the other shares once it had no block left."""


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
    without harvested parts, and for leaves (:class:`HarvestOrder`): they run in a second wave,
    after every container; nothing is reported here.
    """
    sources = pending_sources(workspace, selected)
    if not sources:
        return HarvestPass()
    blocks = sorted((b for b in selected if b.source in sources), key=lambda b: b.id)
    order = harvest_order(blocks, {b.id: block_defines(workspace, b) for b in blocks})
    # Two waves: every container runs in the first, so the leaves left are final in the second.
    first = [b for b in blocks if order.ready(b.id, ())]
    later = [b for b in blocks if not order.ready(b.id, ())]
    for _ in validate_many(workspace, first, executor=executor):
        pass
    final = frozenset(b.id for b in later)
    for _ in validate_many(workspace, later, executor=executor, final_harvest=final):
        pass
    frozen = complete_harvests(workspace, [b.id for b in blocks])
    return HarvestPass(frozen=tuple(frozen), ran=frozenset(b.id for b in blocks))


def harvest_first(
    workspace: BlockSource,
    selected: Sequence[BlockRef],
    validate: Callable[[BlockRef, bool], object],
    *,
    share: tuple[int, int] = (0, 1),
    run_id: str = "",
    folder: Path,
    wait_s: float = 3600.0,
) -> HarvestPass:
    """Run this process's ``share`` (index, count) of the harvest pass, then freeze.

    ``validate(block, final)`` runs one block as the session will (its results and harvest
    go to the cache, so the session's own run of a block without harvested parts is a cache
    hit); ``final``: the block's harvest is final (:meth:`HarvestOrder.final`), so the run is
    the verdict the session would compute after the freeze. Blocks are taken one at a time,
    the first *ready* one (:meth:`HarvestOrder.ready`) in the order given (costliest first),
    else the first not taken, so no process idles while blocks remain. With several processes
    (``count`` > 1, e.g. xdist workers of one run ``run_id``) the blocks taken and done are
    shared in ``folder`` (under a file lock), and the classes each block's file defines are
    read first, each process extracting a share; then each waits, up to ``wait_s``, for the
    others' marker files; a share that never finishes leaves the harvest unfrozen (verdicts
    then use no harvest, as keyed).
    """
    sources = pending_sources(workspace, selected)
    if not sources:
        return HarvestPass()
    index, count = share
    blocks = [b for b in selected if b.source in sources]
    marks = folder / f"run-{run_id}"
    mine: Iterator[tuple[BlockRef, bool]]
    if count <= 1:
        defines = {b.id: block_defines(workspace, b) for b in blocks}
        mine = _taken_here(blocks, harvest_order(blocks, defines))
    else:
        order, extracted = _shared_order(
            workspace, blocks, marks, index=index, count=count, wait_s=wait_s
        )
        mine = _claimed(blocks, order, marks, prefer=extracted)
    ran_now: list[str] = []
    for block, final in mine:
        validate(block, final)
        ran_now.append(block.id)
    ran = frozenset(ran_now)
    waiting = time.monotonic()
    if count > 1:
        shares = _publish_and_wait(
            marks, "share", sorted(ran), index=index, count=count, wait_s=wait_s
        )
        if shares is None:
            return HarvestPass(ran=ran, ran_here=len(ran_now), waited_s=wait_s)
        ran |= frozenset(i for ids in shares for i in ids)
    waited = time.monotonic() - waiting
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / "freeze.lock")):
        frozen = complete_harvests(workspace, [b.id for b in blocks])
    return HarvestPass(frozen=tuple(frozen), ran=ran, ran_here=len(ran_now), waited_s=waited)


def _next_block(
    blocks: Sequence[BlockRef],
    order: HarvestOrder | None,
    taken: Collection[str],
    done: Collection[str],
    start: int = 0,
    *,
    prefer: Collection[str] = (),
) -> BlockRef | None:
    """The first block not taken that is ready, else the first not taken (a leaf taken
    before its containers ran runs recording, as without the order); ``None`` when all are.
    ``start``: every block before it is taken (the search starts there). Among the first
    :data:`LOOKAHEAD` ready blocks, the first in ``prefer`` (ids this process extracted)."""
    first: BlockRef | None = None
    ready: list[BlockRef] = []
    for block in itertools.islice(blocks, start, None):
        if block.id in taken:
            continue
        if order is None or order.ready(block.id, done):
            if not prefer or block.id in prefer:
                return block
            ready.append(block)
            if len(ready) == LOOKAHEAD:
                break
        elif not ready:
            first = first or block
    return ready[0] if ready else first


def _first_untaken(blocks: Sequence[BlockRef], taken: Collection[str], start: int) -> int:
    """The index of the first block at or after ``start`` not in ``taken`` (taken only grows,
    so a caller keeps this as the start of its next search)."""
    while start < len(blocks) and blocks[start].id in taken:
        start += 1
    return start


def _taken_here(blocks: Sequence[BlockRef], order: HarvestOrder) -> Iterator[tuple[BlockRef, bool]]:
    """Every block, in :func:`_next_block` order, and whether its harvest is final (one
    process: a block is done when the next is asked for)."""
    taken: set[str] = set()
    start = 0
    while (block := _next_block(blocks, order, taken, taken, start)) is not None:
        final = order.final(block.id, taken)
        taken.add(block.id)
        start = _first_untaken(blocks, taken, start)
        yield block, final


def _claimed(
    blocks: Sequence[BlockRef],
    order: HarvestOrder | None,
    marks: Path,
    *,
    prefer: Collection[str] = (),
) -> Iterator[tuple[BlockRef, bool]]:
    """The blocks this process takes, one at a time, by :func:`_next_block` over the blocks
    every process of the run took and finished: each block goes to exactly one process.
    The processes share an append-only log (``marks/claims.log``, one ``t <id>`` or ``d <id>``
    line per block taken or done, under a file lock); each reads only what the others appended
    since it last looked. A block is done when this process asks for the next; with no
    ``order``, no block's harvest is final. ``prefer``: ids this process extracted (see
    :func:`_next_block`)."""
    marks.mkdir(parents=True, exist_ok=True)
    log = marks / "claims.log"
    taken: set[str] = set()
    done: set[str] = set()
    seen = start = 0
    finished: str | None = None
    while True:
        with FileLock(str(marks / "claims.lock")), open(log, "a+b") as handle:
            handle.seek(seen)
            for line in handle.read().decode("utf-8").splitlines():
                kind, _, block_id = line.partition(" ")
                (taken if kind == "t" else done).add(block_id)
            lines = []
            if finished is not None:
                done.add(finished)
                lines.append(f"d {finished}\n")
            start = _first_untaken(blocks, taken, start)
            block = _next_block(blocks, order, taken, done, start, prefer=prefer)
            if block is not None:
                taken.add(block.id)
                lines.append(f"t {block.id}\n")
            handle.write("".join(lines).encode("utf-8"))
            handle.flush()
            seen = handle.tell()
        if block is None:
            return
        yield block, order is not None and order.final(block.id, done)
        finished = block.id


def _shared_order(
    workspace: BlockSource,
    blocks: Sequence[BlockRef],
    marks: Path,
    *,
    index: int,
    count: int,
    wait_s: float,
) -> tuple[HarvestOrder | None, frozenset[str]]:
    """The :class:`HarvestOrder` of ``blocks``, each process of the run extracting a share
    (taken from a counter in ``marks``); ``None`` (no block final) when a share never came.
    Also the ids of the blocks this process extracted."""
    mine = {b.id: sorted(block_defines(workspace, b)) for b in _counted(blocks, marks)}
    shares = _publish_and_wait(marks, "defines", mine, index=index, count=count, wait_s=wait_s)
    if shares is None:
        return None, frozenset(mine)
    defines = {i: frozenset(names) for share in shares for i, names in share.items()}
    return harvest_order(blocks, defines), frozenset(mine)


def _counted(blocks: Sequence[BlockRef], marks: Path) -> Iterator[BlockRef]:
    """The blocks this process takes from a counter every process of the run shares
    (``marks/next``, under a file lock): each block goes to exactly one process."""
    marks.mkdir(parents=True, exist_ok=True)
    counter = marks / "next"
    while True:
        with FileLock(str(marks / "next.lock")):
            taken = int(counter.read_text() or 0) if counter.exists() else 0
            counter.write_text(str(taken + 1))
        if taken >= len(blocks):
            return
        yield blocks[taken]


def _write_whole(path: Path, value: object) -> None:
    """Write ``value`` as JSON to ``path``: whole, or not there."""
    path.with_suffix(".tmp").write_text(json.dumps(value))
    path.with_suffix(".tmp").replace(path)


def _publish_and_wait(
    marks: Path, what: str, value: Any, *, index: int, count: int, wait_s: float
) -> list[Any] | None:
    """Publish this share's ``value`` (``marks/<what>-<index>.json``); wait for every other
    share's; return them all, or ``None`` when one never came."""
    marks.mkdir(parents=True, exist_ok=True)
    _write_whole(marks / f"{what}-{index}.json", value)
    deadline = time.monotonic() + wait_s
    paths = [marks / f"{what}-{i}.json" for i in range(count)]
    while time.monotonic() < deadline:
        if all(path.exists() for path in paths):
            return [json.loads(path.read_text()) for path in paths]
        time.sleep(POLL_S)
    return None
