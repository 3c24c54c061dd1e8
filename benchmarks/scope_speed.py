"""CPU time of the index analysis (``analyze_module``) over timm's files, to compare checkouts.

Run it with ``PYTHONPATH`` set to the checkout under test, alternating checkouts, under
``nice`` on a shared machine; it prints the best of ``--repeat`` passes (``time.process_time``)
and the cyclic garbage collector's counts, since a scope tree freed only by that collector
was most of the cost (see benchmarks/results/scope_speed.md).

    PYTHONPATH=/work/tmp/old nice python benchmarks/scope_speed.py old
    PYTHONPATH=$PWD nice python benchmarks/scope_speed.py new
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

TIMM = Path("/work/corpora/timm/unpacked")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label", help="a name for the checkout, printed with the figures")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--root", type=Path, default=TIMM, help="a folder of .py files")
    args = parser.parse_args()
    from nnrag.index.units import analyze_module

    files = [(path, path.read_bytes()) for path in sorted(args.root.rglob("*.py"))]

    def one_pass() -> float:
        started = time.process_time()
        for path, data in files:
            relative = path.relative_to(args.root).as_posix()
            analyze_module(
                source="timm",
                module=relative[:-3].replace("/", "."),
                path=relative,
                data=data,
                is_package=path.name == "__init__.py",
            )
        return time.process_time() - started

    seconds = [one_pass() for _ in range(args.repeat)]
    collected = [generation["collected"] for generation in gc.get_stats()]
    print(
        f"{args.label}: analyze_module on {len(files)} files, best of {args.repeat}: "
        f"{min(seconds):.3f} CPU s ({', '.join(f'{s:.2f}' for s in seconds)}); "
        f"cyclic garbage collected per generation: {collected}"
    )


if __name__ == "__main__":
    main()
