"""The harvest pass shared by several processes: each takes the next block not yet taken."""

from __future__ import annotations

import threading
from pathlib import Path

from nnrag.model import BlockRef
from nnrag.validate.harvesting import HarvestPass, harvest_first
from nnrag.validate.results import ResultCache


class FakeWorkspace:
    """What the harvest pass reads of a workspace: its blocks, result cache and state."""

    def __init__(self, blocks: list[BlockRef], cache: ResultCache) -> None:
        self._blocks = tuple(blocks)
        self._cache = cache

    def blocks(self) -> tuple[BlockRef, ...]:
        return self._blocks

    def results(self) -> ResultCache:
        return self._cache

    def extraction_state(self) -> str:
        return "state"


def _block(name: str) -> BlockRef:
    return BlockRef(source="src", module="m", name=name, path="m.py", line=1)


def test_a_share_on_a_slow_block_leaves_the_others_to_the_other_share(tmp_path: Path) -> None:
    blocks = [_block(n) for n in ("Slow", "A", "B", "C", "D")]  # costliest first
    workspace = FakeWorkspace(blocks, ResultCache(tmp_path / "results.sqlite"))
    quick_done = threading.Event()
    quick_ran: list[str] = []

    def validate(block: BlockRef) -> None:
        if block.name == "Slow":  # finishes only once the other share ran every other block
            assert quick_done.wait(timeout=60), "a fixed share left quick blocks behind Slow"
            return
        quick_ran.append(block.name)
        if len(quick_ran) == 4:
            quick_done.set()

    results: dict[int, HarvestPass] = {}

    def share(index: int) -> None:
        results[index] = harvest_first(
            workspace,  # type: ignore[arg-type]  # the part of the BlockSource protocol it reads
            blocks,
            validate,
            share=(index, 2),
            run_id="run",
            folder=tmp_path / "pass",
            wait_s=60,
        )

    threads = [threading.Thread(target=share, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(quick_ran) == ["A", "B", "C", "D"]  # each block ran once, in one share
    assert results[0].ran == results[1].ran == frozenset(b.id for b in blocks)
    assert results[0].frozen + results[1].frozen == ("src",)  # frozen once
    assert workspace.results().harvest_complete("src", "state")
