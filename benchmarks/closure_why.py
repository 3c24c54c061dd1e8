"""Why a block file is big: the closure's units as a tree of who-included-whom, with sizes.

Runs ``nnrag.extract.resolve``'s walk for each block id and prints, per block, its units'
lines by module and the inclusion tree (each unit under the unit whose inclusion carried it
first) down to the subtrees above ``--share`` of the total. A subtree's lines count whole
units (a plain class's left-out methods included), so they over-count pruned classes:

    PYTHONPATH=$PWD nice python benchmarks/closure_why.py --repos R --cache C ID ...
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any

UnitKey = tuple[str, str, int]


def explain(repos: Path, cache: Path, ids: list[str], share: float) -> None:
    from nnrag.config import load_settings
    from nnrag.extract import resolve
    from nnrag.extract.needs import scanner_for
    from nnrag.index.symbols import symbols_for
    from nnrag.workspace import Workspace

    workspace = Workspace(load_settings(repos, cache_dir=cache, environ={}))
    workspace.build()
    index = workspace.index()
    blocks = {b.id: b for b in workspace.blocks()}
    sys.setrecursionlimit(100_000)
    for block_id in ids:
        walk = resolve._Walk(index, symbols_for(index), scanner_for(index), blocks[block_id])
        walk.run()
        _Tree(walk, share).show(block_id)


class _Tree:
    """One walk's units under the unit that carried each first, with their sizes."""

    def __init__(self, walk: Any, share: float) -> None:
        self.units = walk.units
        self.size = {
            k: 2 if k in walk.stubs else e.unit.end_line - e.unit.start_line + 1
            for k, e in self.units.items()
        }
        self.children: dict[UnitKey | None, list[UnitKey]] = collections.defaultdict(list)
        for key, entry in self.units.items():
            self.children[entry.parent].append(key)
        self.total: dict[UnitKey, int] = {}
        self.whole = sum(self.subtree(k) for k in self.children[None])
        self.share = share

    def subtree(self, key: UnitKey) -> int:
        if key not in self.total:
            inner = sum(self.subtree(c) for c in self.children.get(key, []))
            self.total[key] = self.size[key] + inner
        return self.total[key]

    def show(self, block_id: str) -> None:
        by_module: collections.Counter[str] = collections.Counter()
        for key, lines in self.size.items():
            by_module[key[1]] += lines
        print(f"== {block_id}: {len(self.units)} units, ~{self.whole} lines")
        print("   by module:", ", ".join(f"{m} {n}" for m, n in by_module.most_common(12)))
        for root in self.children[None]:
            self._show(root, 0)

    def _show(self, key: UnitKey, depth: int) -> None:
        unit = self.units[key].unit
        label = unit.binds[0] if unit.binds else f"<{unit.kind} at line {unit.start_line}>"
        print(f"{'  ' * depth}{self.total[key]:7d} {self.size[key]:6d} {key[1]}:{label}")
        for child in sorted(self.children.get(key, []), key=lambda c: -self.total[c]):
            if self.total[child] > self.whole * self.share:
                self._show(child, depth + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--share", type=float, default=0.02, help="smallest subtree shown")
    parser.add_argument("ids", nargs="+")
    args = parser.parse_args()
    explain(args.repos, args.cache, args.ids, args.share)


if __name__ == "__main__":
    main()
