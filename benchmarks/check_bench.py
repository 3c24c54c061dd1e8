"""Benchmark: `nnrag check` (the pre-commit hook's command) on 20 vendored timm blocks.

Extracts 20 closed blocks spread over timm's discovered blocks (index_tree + extract, not
timed) into benchmarks/.work/check_bench/, then runs the real console script
`nnrag check FILE...` several times as a child process and records, per run, the wall time
and the child's peak RSS (``os.wait4`` rusage). Also runs the check in a child that asserts
torch was never imported, and times the in-process `check_file` calls alone.

    python benchmarks/check_bench.py [--runs 7] [--blocks 20]

Writes benchmarks/results/check_bench.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMM = Path("/work/corpora/src/timm-1.0.31")
WORK = HERE / ".work" / "check_bench"
RESULTS = HERE / "results"


def vendor_blocks(count: int) -> list[Path]:
    from nnrag.discover import discover_blocks
    from nnrag.extract import extract
    from nnrag.index import index_tree

    index = index_tree(TIMM, source="timm")
    blocks = discover_blocks(index)
    step = max(1, len(blocks) // (count * 2))
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    files: list[Path] = []
    for block in blocks[::step]:
        extracted = extract(index, block)
        if not extracted.closed:
            continue
        path = WORK / f"{block.name}_{len(files):02d}.py"
        path.write_text(extracted.code, encoding="utf-8")
        files.append(path)
        if len(files) == count:
            break
    return files


def run_child(command: list[str]) -> tuple[float, int, int, str, float]:
    """(wall s, peak RSS in KiB, exit code, stdout, CPU s user+sys) of one child process."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss, child.returncode, output, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--blocks", type=int, default=20)
    args = parser.parse_args()

    files = vendor_blocks(args.blocks)
    lines = sum(len(f.read_text().splitlines()) for f in files)
    nnrag = shutil.which("nnrag") or str(Path(sys.executable).parent / "nnrag")
    command = [nnrag, "check", *map(str, files)]

    runs = [run_child(command) for _ in range(args.runs)]
    codes = {run[2] for run in runs}
    walls = [run[0] for run in runs]
    rss = [run[1] for run in runs]
    cpu = [run[4] for run in runs]
    baseline = [run_child([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
    base_walls = [run[0] for run in baseline]
    base_cpu = [run[4] for run in baseline]

    probe = (
        "import sys; from nnrag.cli import main; code = main(sys.argv[1:]); "
        "print('TORCH', 'torch' in sys.modules, 'EXIT', code)"
    )
    _, _, _, torch_output, _ = run_child([sys.executable, "-c", probe, "check", *map(str, files)])

    from nnrag.checks import check_file

    started = time.perf_counter()
    findings = [f for path in files for f in check_file(path)]
    in_process = time.perf_counter() - started

    result = {
        "command": "nnrag check <20 vendored timm blocks>",
        "blocks": len(files),
        "lines": lines,
        "files": [f.name for f in files],
        "runs": args.runs,
        "exit_codes": sorted(codes),
        "findings": len(findings),
        "wall_s": {
            "median": statistics.median(walls),
            "min": min(walls),
            "max": max(walls),
        },
        "cpu_s_median": statistics.median(cpu),
        "python_startup_cpu_s_median": statistics.median(base_cpu),
        "peak_rss_mib": {"median": statistics.median(rss) / 1024, "max": max(rss) / 1024},
        "python_startup_s_median": statistics.median(base_walls),
        "in_process_check_s": in_process,
        "torch_imported": "TORCH True" in torch_output,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus (shared)",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "check_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    md = f"""# nnrag check benchmark

`python benchmarks/check_bench.py` — the pre-commit hook's command, `nnrag check FILE...`, on
{len(files)} closed blocks extracted from timm 1.0.31 ({lines} lines in all: timm blocks inline
large closures, up to ~4,300 lines for one block), run
{args.runs} times as a child process (wall time and the child's peak RSS from `os.wait4`).

| measure | value |
|---|---|
| wall time, median (min-max) | {statistics.median(walls):.3f} s \
({min(walls):.3f}-{max(walls):.3f}) |
| CPU time (user+sys) of the child, median | {statistics.median(cpu):.3f} s |
| Python startup (`python -c pass`): wall / CPU, median | \
{result["python_startup_s_median"]:.3f} s / {statistics.median(base_cpu):.3f} s |
| checks alone, in process (20 files) | {in_process:.3f} s |
| peak RSS of the child, median | {result["peak_rss_mib"]["median"]:.1f} MiB |
| exit codes / findings | {sorted(codes)} / {len(findings)} |
| torch imported by the check | {result["torch_imported"]} |

Machine: {result["machine"]}, Python {result["python"]}; other jobs were running.
"""
    (RESULTS / "check_bench.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
