"""Benchmark: `nnrag check` (the pre-commit hook's command) on 20 vendored timm blocks.

Extracts 20 closed blocks spread over timm's discovered blocks (index_tree + extract, not
timed) into benchmarks/.work/check_bench/, then runs the real console script
`nnrag check FILE...` end to end (interpreter start included) several times as a child
process and records, per run, the wall time, the child's CPU time (user+sys) and peak RSS
(``os.wait4`` rusage), with the load average beside them:

- cold: an empty check cache per run (``--cache`` to a fresh folder), so every file is
  parsed, compiled and scoped; this is the headline;
- warm: the same cache folder, already filled by a first run (repeated pre-commit runs);
- cold without bytecode: as cold, but with Python's bytecode cache off
  (PYTHONDONTWRITEBYTECODE=1, as in this sandbox), so nnrag's own modules are compiled from
  source at every start; the cold and warm rows use a bytecode cache
  (PYTHONPYCACHEPREFIX under benchmarks/.work/), as a pip install has.

Also runs the check in a child that asserts torch was never imported, and times the
in-process `check_file` calls alone (no cache).

    python benchmarks/check_bench.py [--runs 7] [--blocks 20] [--baseline REV ...]

Writes benchmarks/results/check_bench.json and .md (``--out NAME``: NAME.json and .md).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TIMM = Path("/work/corpora/src/timm-1.0.31")
WORK = HERE / ".work" / "check_bench"
PYCACHE = HERE / ".work" / "check_bench_pycache"
RESULTS = HERE / "results"


def vendor_blocks(count: int) -> list[Path]:
    from nnrag.extract.block import extract
    from nnrag.index.build import index_tree
    from nnrag.index.discover import discover_blocks

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


def run_child(
    command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, int, int, str, float]:
    """(wall s, peak RSS in KiB, exit code, stdout, CPU s user+sys) of one child process."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd
    )
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss, child.returncode, output, usage.ru_utime + usage.ru_stime


def series(runs: list[tuple[float, int, int, str, float]], load: tuple[float, float]) -> dict:
    """Summary of repeated runs, with the 1-minute load average before and after."""
    walls = [run[0] for run in runs]
    cpu = [run[4] for run in runs]
    return {
        "wall_s": {"median": statistics.median(walls), "min": min(walls), "max": max(walls)},
        "cpu_s": {"median": statistics.median(cpu), "min": min(cpu), "max": max(cpu)},
        "peak_rss_mib": statistics.median(run[1] for run in runs) / 1024,
        "exit_codes": sorted({run[2] for run in runs}),
        "load_1min_before_after": [round(load[0], 2), round(load[1], 2)],
    }


def timed(label: str, command: list[str], env: dict[str, str], runs: int, fresh: bool) -> dict:
    """``runs`` runs of ``command`` (with a new empty ``--cache`` folder each if ``fresh``)."""
    return interleaved([(label, command, env, None, fresh)], runs)[label]


Variant = tuple[str, list[str], dict[str, str], Path | None, bool]
"""label, command, environment, working folder, whether to give a fresh ``--cache``."""


def interleaved(variants: list[Variant], runs: int) -> dict[str, dict]:
    """``runs`` rounds of every variant in turn (so that they share the load), summarized."""
    before = os.getloadavg()[0]
    results: dict[str, list[tuple[float, int, int, str, float]]] = {v[0]: [] for v in variants}
    for _ in range(runs):
        for label, command, env, cwd, fresh in variants:
            if fresh:
                with tempfile.TemporaryDirectory() as cache:
                    results[label].append(run_child([*command, "--cache", cache], env, cwd))
            else:
                results[label].append(run_child(command, env, cwd))
    load = (before, os.getloadavg()[0])
    summaries = {label: series(done, load) for label, done in results.items()}
    for label, summary in summaries.items():
        print(
            f"{label}: wall {summary['wall_s']['median']:.3f} s, "
            f"CPU {summary['cpu_s']['median']:.3f} s (load {summary['load_1min_before_after']})",
            file=sys.stderr,
        )
    return summaries


def baseline_variants(
    revision: str, files: list[Path], bytecode: dict[str, str], no_bytecode: dict[str, str]
) -> list[Variant]:
    """`nnrag check` as it was at ``revision`` (its nnrag/ from git, run with -m from there)."""
    folder = Path(tempfile.mkdtemp(prefix="check_bench_baseline_"))
    atexit.register(shutil.rmtree, folder, True)
    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", revision, "nnrag"],
        check=True,
        capture_output=True,
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    command = [sys.executable, "-m", "nnrag.cli", "check", *map(str, files)]
    # a revision with a check cache gets a fresh one per run, as the cold rows do (without
    # it, every run after the first would read the findings from the user's cache)
    usage = subprocess.run(
        [sys.executable, "-m", "nnrag.cli", "check", "--help"],
        env={**bytecode, "PYTHONPATH": str(folder)},
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    fresh = "--cache" in usage.stdout
    return [
        (f"baseline {revision}", command, {**bytecode, "PYTHONPATH": str(folder)}, folder, fresh),
        (
            f"baseline {revision}, no bytecode",
            command,
            {**no_bytecode, "PYTHONPATH": str(folder)},
            folder,
            fresh,
        ),
    ]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument(
        "--baseline",
        metavar="REV",
        action="append",
        default=[],
        help="also time `nnrag check` of this git revision (repeatable)",
    )
    parser.add_argument(
        "--out", default="check_bench", help="results/OUT.json and .md (default check_bench)"
    )
    parser.add_argument("--vendor-only", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = _arguments()
    if args.vendor_only:
        print(json.dumps([str(path) for path in vendor_blocks(args.blocks)]))
        return

    # Vendor in a child: a forked child's peak RSS counts its parent's pages until it execs,
    # so this process stays small (no index, no nnrag import) until the runs are measured.
    vendored = subprocess.run(
        [sys.executable, __file__, "--vendor-only", "--blocks", str(args.blocks)],
        check=True,
        capture_output=True,
        text=True,
    )
    files = [Path(name) for name in json.loads(vendored.stdout)]
    lines = sum(len(f.read_text().splitlines()) for f in files)
    nnrag = shutil.which("nnrag") or str(Path(sys.executable).parent / "nnrag")
    command = [nnrag, "check", *map(str, files)]
    bytecode = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    bytecode["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    no_bytecode = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    no_bytecode.pop("PYTHONPYCACHEPREFIX", None)

    shutil.rmtree(PYCACHE, ignore_errors=True)
    run_child([*command, "--no-cache"], bytecode)  # writes the bytecode cache, not timed
    variants: list[Variant] = [
        ("cold", command, bytecode, None, True),
        ("cold, no bytecode", command, no_bytecode, None, True),
    ]
    for revision in args.baseline:
        added = baseline_variants(revision, files, bytecode, no_bytecode)
        _, base_command, env, cwd, fresh = added[0]
        run_child([*base_command, *(["--no-cache"] if fresh else [])], env, cwd)  # bytecode
        variants += added
    measured = interleaved(variants, args.runs)
    cold, cold_source = measured["cold"], measured["cold, no bytecode"]
    with tempfile.TemporaryDirectory() as cache:
        warm_command = [*command, "--cache", cache]
        run_child(warm_command, bytecode)  # fills the check cache, not timed
        warm = timed("warm", warm_command, bytecode, args.runs, fresh=False)
    startup = timed("python -c pass", [sys.executable, "-c", "pass"], bytecode, args.runs, False)

    probe = (
        "import sys; from nnrag.cli import main; code = main(sys.argv[1:]); "
        "print('TORCH', 'torch' in sys.modules, 'EXIT', code)"
    )
    _, _, _, torch_output, _ = run_child(
        [sys.executable, "-c", probe, "check", "--no-cache", *map(str, files)]
    )

    from nnrag.check.files import check_files

    started, cpu_started = time.perf_counter(), time.process_time()
    checked = check_files(files)
    findings = [f for found in checked if isinstance(found, tuple) for f in found]
    in_process = time.perf_counter() - started
    in_process_cpu = time.process_time() - cpu_started

    result = {
        "command": "nnrag check <20 vendored timm blocks>",
        "blocks": len(files),
        "lines": lines,
        "files": [f.name for f in files],
        "runs": args.runs,
        "findings": len(findings),
        "cold": cold,
        "warm": warm,
        "cold_no_bytecode": cold_source,
        "baseline": {k: v for k, v in measured.items() if k.startswith("baseline")},
        "python_startup": startup,
        "in_process_check_s": {"wall": in_process, "cpu": in_process_cpu},
        "torch_imported": "TORCH True" in torch_output,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus (shared)",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2) + "\n")

    write_markdown(result, args.out)


def write_markdown(result: dict[str, Any], out: str = "check_bench") -> None:
    """``results/<out>.md`` from what :func:`main` measured."""
    alone = result["in_process_check_s"]
    blocks, lines = result["blocks"], result["lines"]

    def row(name: str, data: dict) -> str:
        wall, cpu = data["wall_s"], data["cpu_s"]
        return (
            f"| {name} | {wall['median']:.3f} s ({wall['min']:.3f}-{wall['max']:.3f}) | "
            f"{cpu['median']:.3f} s ({cpu['min']:.3f}-{cpu['max']:.3f}) | "
            f"{data['peak_rss_mib']:.1f} MiB | {data['exit_codes']} | "
            f"{data['load_1min_before_after'][0]} / {data['load_1min_before_after'][1]} |"
        )

    md = f"""# nnrag check benchmark

`nice python benchmarks/check_bench.py` — the pre-commit hook's command,
`nnrag check FILE...`, on {blocks} closed blocks extracted from timm 1.0.31 ({lines} lines
in all: timm blocks inline large closures, up to ~4,300 lines for one block), run
{result["runs"]} times per row as a child process, end to end (interpreter start included). Wall
time, the child's CPU time (user+sys) and peak RSS from `os.wait4`; medians (min-max).

| run | wall | CPU (user+sys) | peak RSS | exit codes | load avg (1 min) before / after |
|---|---|---|---|---|---|
{row("**cold**: empty check cache", result["cold"])}
{row("warm: every file in the check cache", result["warm"])}
{row("cold, no bytecode cache (PYTHONDONTWRITEBYTECODE=1)", result["cold_no_bytecode"])}
{row("`python -c pass` (interpreter start)", result["python_startup"])}
{"".join(row(k, v) + chr(10) for k, v in result["baseline"].items())}
- cold and warm rows: nnrag's modules from a bytecode cache (as after `pip install`); the
  "no bytecode" rows compile them from source at every start, as this sandbox's environment
  does. The cold rows (and the baseline rows, if any: `--baseline REV` runs the `nnrag/` of
  that git revision, with a fresh check cache per run when it has one) are interleaved run
  by run, so they share the load; the load average is the same for all of them.
- checks alone, in process (`check_files`, one process, no cache): {alone["wall"]:.3f} s wall, \
{alone["cpu"]:.3f} s CPU; findings: {result["findings"]}.
- torch imported by the check: {result["torch_imported"]}.
- peak RSS: of the child process (the benchmark's own process stays small, since a forked
  child counts its parent's pages until it execs).

Machine: {result["machine"]}, Python {result["python"]}; other engineers' jobs were running
(see the load averages): CPU time is the steadier measure.
"""
    (RESULTS / f"{out}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
