"""CPU of the check's name pass (``unresolved_names``) with and without leaving out the
function bodies the compiler's names clear (``reads=``), on the check_bench blocks.

Checks each file once the check's way (pieces parsed and compiled, as ``nnrag check``
does) to collect the trees and the ``reads`` callbacks, then times ``unresolved_names`` on
all of them ``--rounds`` times, the two ways alternated, and prints the medians, the CPU of
the whole in-process check, and whether the findings are the same. Needs the blocks of
``check_bench.py`` (``python benchmarks/check_bench.py --vendor-only`` writes them).

    PYTHONPATH=$PWD nice python benchmarks/name_pass_bench.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import time
from pathlib import Path
from typing import Any

WORK = Path(__file__).resolve().parent / ".work" / "check_bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    from nnrag.check import static
    from nnrag.check.files import check_files
    from nnrag.check.pieces import Compiled
    from nnrag.pyscope.scoping import unresolved_names

    files = sorted(WORK.glob("*.py"))
    calls: list[tuple[ast.Module, dict[str, Any]]] = []
    original = static.unresolved_names

    def collect(tree: ast.Module, **keywords: Any) -> Any:
        calls.append((tree, keywords))
        return original(tree, **keywords)

    made: dict[int, tuple[Any, Any]] = {}
    making = static.function_reads

    def remember(units: Any, codes: Any) -> Any:
        reads = making(units, codes)
        made[id(reads)] = (units, codes)
        return reads

    static.unresolved_names = collect  # type: ignore[assignment]  # a recording wrapper
    static.function_reads = remember
    compiled = Compiled()
    for path in files:
        text = path.read_text("utf-8")
        static.check_text(text, filename=str(path), source_packages=None, compiled=compiled)
    static.unresolved_names, static.function_reads = original, making
    times: dict[str, list[float]] = {"with reads": [], "without": []}
    load = os.getloadavg()[0]
    for _ in range(args.rounds):
        for label, seconds in times.items():
            started = time.process_time()
            for tree, kw in calls:
                reads = None  # made anew each round, as the check makes it once per file
                if label == "with reads" and kw["reads"] is not None:
                    reads = making(*made[id(kw["reads"])])
                unresolved_names(tree, deltas=kw["deltas"], reads=reads)
            seconds.append(time.process_time() - started)
    same = all(
        unresolved_names(tree, deltas=kw["deltas"], reads=kw["reads"])
        == unresolved_names(tree, deltas=kw["deltas"])
        for tree, kw in calls
    )
    started = time.process_time()
    check_files(files)
    whole = time.process_time() - started
    for label, seconds in times.items():
        print(
            f"name pass {label}: median {statistics.median(seconds):.3f} CPU s "
            f"(min {min(seconds):.3f}, max {max(seconds):.3f}, {len(seconds)} rounds)"
        )
    print(
        f"{len(files)} files; whole in-process check (one run, no cache): {whole:.3f} CPU s; "
        f"same findings with reads: {same}; load {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
