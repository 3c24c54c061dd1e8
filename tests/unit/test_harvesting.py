"""The harvest pass shared by several processes: each takes the next block not yet taken."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from nnrag.model import BlockRef
from nnrag.validate.containers import defined_classes, holds_other_blocks
from nnrag.validate.harvesting import HarvestPass, harvest_first, harvest_order
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

    def extract(self, block: BlockRef) -> SimpleNamespace:
        return SimpleNamespace(code=f"class {block.name}:\n    pass\n")


def _block(name: str) -> BlockRef:
    return BlockRef(source="src", module="m", name=name, path="m.py", line=1)


def _two_shares(
    workspace: object,
    blocks: list[BlockRef],
    validate_in: Callable[[int], Callable[[BlockRef, bool], None]],
    folder: Path,
) -> dict[int, HarvestPass]:
    """Run the pass as two processes of one run would (threads here), each validating with
    ``validate_in(its index)``; what each share's pass returned."""
    results: dict[int, HarvestPass] = {}

    def share(index: int) -> None:
        results[index] = harvest_first(
            workspace,  # type: ignore[arg-type]  # the part of the BlockSource protocol it reads
            blocks,
            validate_in(index),
            share=(index, 2),
            run_id="run",
            folder=folder,
            wait_s=60,
        )

    threads = [threading.Thread(target=share, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def test_a_share_on_a_slow_block_leaves_the_others_to_the_other_share(tmp_path: Path) -> None:
    blocks = [_block(n) for n in ("Slow", "A", "B", "C", "D")]  # costliest first
    workspace = FakeWorkspace(blocks, ResultCache(tmp_path / "results.sqlite"))
    quick_done = threading.Event()
    quick_ran: list[str] = []

    def validate(block: BlockRef, final: bool) -> None:
        if block.name == "Slow":  # finishes only once the other share ran every other block
            assert quick_done.wait(timeout=60), "a fixed share left quick blocks behind Slow"
            return
        quick_ran.append(block.name)
        if len(quick_ran) == 4:
            quick_done.set()

    results = _two_shares(workspace, blocks, lambda _: validate, tmp_path / "pass")
    assert sorted(quick_ran) == ["A", "B", "C", "D"]  # each block ran once, in one share
    assert results[0].ran == results[1].ran == frozenset(b.id for b in blocks)
    assert results[0].frozen + results[1].frozen == ("src",)  # frozen once
    assert workspace.results().harvest_complete("src", "state")


# --------------------------------------------------------------------------- the order


class CodeWorkspace(FakeWorkspace):
    """A fake workspace whose block files define the classes given (by block name)."""

    def __init__(
        self, blocks: list[BlockRef], cache: ResultCache, files: dict[str, list[str]]
    ) -> None:
        super().__init__(blocks, cache)
        self._files = files

    def extract(self, block: BlockRef) -> SimpleNamespace:
        names = self._files.get(block.name, [block.name])
        return SimpleNamespace(code="".join(f"class {n}(nn.Module):\n    pass\n" for n in names))


def test_defined_classes_are_the_class_statements_at_any_depth() -> None:
    code = "class A(nn.Module):\n    class Inner:\n        pass\ndef f():\n    class B: pass\n"
    assert defined_classes(code) == {"A", "Inner", "B"}


def test_a_container_is_a_block_whose_file_defines_a_class_of_the_name() -> None:
    whole, middle, part = _block("Whole"), _block("Middle"), _block("Part")
    other = BlockRef(source="src", module="n", name="Part", path="n.py", line=1)
    foreign = BlockRef(source="elsewhere", module="m", name="Part", path="m.py", line=1)
    order = harvest_order(
        [whole, middle, part, other, foreign],
        {
            whole.id: frozenset({"Whole", "Middle", "Part"}),
            middle.id: frozenset({"Middle", "Part"}),
            part.id: frozenset({"Part"}),
            other.id: frozenset({"Part"}),
        },
    )
    # a class of that name from any module of the source; never from another source
    assert order.containers[part.id] == {whole.id, middle.id, other.id}
    assert order.containers[middle.id] == {whole.id}
    assert whole.id not in order.containers
    assert order.leaves == {foreign.id}  # Part: the other module's file defines Part
    assert order.ready(part.id, set())  # no leaf: it records, so it runs whenever taken
    assert not order.final(part.id, {whole.id, middle.id, other.id})
    alone = harvest_order([whole, part], {whole.id: frozenset({"Whole", "Part"})})
    assert alone.leaves == {part.id}
    assert not alone.ready(part.id, set())
    assert alone.final(part.id, {whole.id})


def test_holds_other_blocks_agrees_with_the_harvest_order() -> None:
    whole, part = _block("Whole"), _block("Part")
    other = BlockRef(source="src", module="n", name="Part", path="n.py", line=1)
    foreign = BlockRef(source="elsewhere", module="m", name="Lone", path="m.py", line=1)
    blocks = [whole, part, other, foreign]
    files = {
        whole.id: "class Whole(nn.Module):\n    pass\nclass Part(nn.Module):\n    pass\n",
        part.id: "class Part(nn.Module):\n    pass\n",
        other.id: "class Part(nn.Module):\n    pass\n",
        foreign.id: "class Lone(nn.Module):\n    pass\nclass Whole:\n    pass\n",
    }
    order = harvest_order(blocks, {i: defined_classes(code) for i, code in files.items()})
    held = {b.id for b in blocks if holds_other_blocks(files[b.id], b, blocks)}
    # Part of one module holds the other module's Part; another source's Whole is not held
    assert held == {whole.id, part.id, other.id}
    assert held == {b.id for b in blocks} - order.leaves


def test_one_process_runs_containers_before_their_parts(tmp_path: Path) -> None:
    # given costliest first: the part first, its container last
    blocks = [_block(n) for n in ("Part", "Lone", "Middle", "Whole")]
    files = {"Whole": ["Whole", "Middle", "Part"], "Middle": ["Middle", "Part"]}
    workspace = CodeWorkspace(blocks, ResultCache(tmp_path / "results.sqlite"), files)
    runs: list[tuple[str, bool]] = []
    done = harvest_first(
        workspace,  # type: ignore[arg-type]  # the part of the BlockSource protocol it reads
        blocks,
        lambda block, final: runs.append((block.name, final)),
        folder=tmp_path / "pass",
    )
    # Middle and Whole record (no leaves): taken at once; the leaves once their containers ran
    assert runs == [("Lone", True), ("Middle", False), ("Whole", False), ("Part", True)]
    assert done.frozen == ("src",)


def test_a_cycle_runs_as_without_the_order(tmp_path: Path) -> None:
    blocks = [_block(n) for n in ("A", "B")]
    files = {"A": ["A", "B"], "B": ["B", "A"]}  # each file holds the other class
    workspace = CodeWorkspace(blocks, ResultCache(tmp_path / "results.sqlite"), files)
    runs: list[tuple[str, bool]] = []
    harvest_first(
        workspace,  # type: ignore[arg-type]  # the part of the BlockSource protocol it reads
        blocks,
        lambda block, final: runs.append((block.name, final)),
        folder=tmp_path / "pass",
    )
    assert runs == [("A", False), ("B", False)]  # both record; both rerun after the freeze


def test_a_process_with_no_ready_block_takes_a_part_rather_than_idle(tmp_path: Path) -> None:
    blocks = [_block(n) for n in ("Whole", "Part", "Lone")]
    files = {"Whole": ["Whole", "Part"]}
    workspace = CodeWorkspace(blocks, ResultCache(tmp_path / "results.sqlite"), files)
    part_ran = threading.Event()
    runs: dict[str, tuple[int, bool]] = {}

    def validate_in(index: int) -> Callable[[BlockRef, bool], None]:
        def validate(block: BlockRef, final: bool) -> None:
            runs[block.name] = (index, final)
            if block.name == "Whole":  # still running when the other share looks for work
                assert part_ran.wait(timeout=60), "a share idled while Part was left"
            if block.name == "Part":
                part_ran.set()

        return validate

    _two_shares(workspace, blocks, validate_in, tmp_path / "pass")
    assert set(runs) == {"Whole", "Part", "Lone"}
    assert runs["Part"][1] is False  # taken before Whole finished: it records, as before
    assert runs["Part"][0] != runs["Whole"][0]
    assert workspace.results().harvest_complete("src", "state")


def test_a_process_prefers_a_block_it_extracted_among_the_next_ready_ones() -> None:
    from nnrag.validate.harvesting import LOOKAHEAD, _next_block

    blocks = [_block(f"B{i}") for i in range(LOOKAHEAD + 2)]
    ids = [b.id for b in blocks]
    assert _next_block(blocks, None, set(), set(), prefer={ids[3]}) == blocks[3]
    # beyond the next LOOKAHEAD ready blocks, order wins: the costliest first
    assert _next_block(blocks, None, set(), set(), prefer={ids[LOOKAHEAD]}) == blocks[0]
    assert _next_block(blocks, None, {ids[0]}, set(), prefer={ids[LOOKAHEAD]}) == blocks[8]
    # a block not ready (a leaf whose container has not run) is never preferred over a ready one
    files = {"B0": ["B0", "B1"]}
    order = harvest_order(blocks, {b.id: frozenset(files.get(b.name, [b.name])) for b in blocks})
    assert _next_block(blocks, order, {ids[0]}, set(), prefer={ids[1]}) == blocks[2]
    assert _next_block(blocks, order, {ids[0]}, {ids[0]}, prefer={ids[1]}) == blocks[1]
