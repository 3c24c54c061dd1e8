"""Wall time of the sandboxed adapters on N block files: ``nnrag check --import`` and
``pytest --nnrag-vendored DIR --nnrag-depth import``, for one or more checkouts of nnrag.

Before issue 11 each file started its own sandbox server (a torch import, ~2.4 s); after it,
one server serves the whole run. Block files: any folder of nnrag block files, e.g. the
``blocks/timm`` output of ``benchmarks/layout_digest.py``; the first N (sorted) are copied
into a fresh folder so both adapters see the same files.

    nice python benchmarks/adapter_sandbox_bench.py --blocks /tmp/digest/blocks/timm \\
        --checkout before=/work/wt/old --checkout after=$PWD

Writes benchmarks/results/adapter_sandbox_bench.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def load() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(value, 2) for value in os.getloadavg()]


def timed(command: list[str], *, checkout: Path, cwd: Path) -> dict[str, object]:
    """Run ``command`` with ``checkout`` first on the path; wall seconds, exit code, load."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "NNRAG_CACHE_DIR": str(cwd / "cache")}
    before = load()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
    return {
        "seconds": round(seconds, 2),
        "exit": done.returncode,
        "last_line": tail[0] if tail else "",
        "load_before": before,
        "load_after": load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=Path, required=True, help="folder of block files")
    parser.add_argument("--files", type=int, default=10, help="how many block files (10)")
    parser.add_argument(
        "--checkout", action="append", required=True, metavar="LABEL=PATH", help="repeatable"
    )
    args = parser.parse_args()
    chosen = sorted(args.blocks.rglob("*.py"))[: args.files]
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="nnrag-adapter-bench-") as tmp:
        folder = Path(tmp) / "blocks"
        folder.mkdir()
        for path in chosen:
            shutil.copy(path, folder / path.name)
        commands = {
            "nnrag check --import": [
                *(sys.executable, "-m", "nnrag.cli", "check", "--import", "--no-cache"),
                str(folder),
            ],
            "pytest --nnrag-vendored (depth import)": [
                *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
                *("--nnrag-vendored", str(folder), "--nnrag-depth", "import"),
            ],
        }
        for spec in args.checkout:
            label, _, path = spec.partition("=")
            for name, command in commands.items():
                row = timed(command, checkout=Path(path).resolve(), cwd=Path(tmp))
                rows.append({"checkout": label, "path": path, "adapter": name, **row})
                print(json.dumps(rows[-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    report = {
        "command": " ".join(["python", *sys.argv]),
        "files": [path.name for path in chosen],
        "cpus": os.cpu_count(),
        "rows": rows,
    }
    (RESULTS / "adapter_sandbox_bench.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# One sandbox per run: `check --import` and `--nnrag-vendored` on "
        f"{len(chosen)} block files",
        "",
        f"Command: `nice {report['command']}`  ",
        f"Machine: {os.cpu_count()} cpus, shared with other engineers' jobs (load averages "
        "below, 1/5/15 min): wall-clock figures are pessimistic; compare within a row pair.",
        "",
        "| checkout | adapter | wall s | exit | load before | load after | last line |",
        "|---|---|---:|---:|---|---|---|",
    ]
    lines += [
        f"| {r['checkout']} | {r['adapter']} | {r['seconds']} | {r['exit']} | "
        f"{r['load_before']} | {r['load_after']} | {str(r['last_line'])[:80]} |"
        for r in rows
    ]
    (RESULTS / "adapter_sandbox_bench.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
