"""Time the pytest plugin on examples/repos.json: collection, -n 2 run, cached re-run, xdist parity.

Runs pytest in subprocesses (as a user would) in an empty folder, so only the
blocks are collected. Steps:

1. warm-up collection (builds the index if the cache is cold; not the measured number);
2. collection with a warm index (``--collect-only``);
3. full run with ``-n 2`` (validates what is not cached yet);
4. the same run again with every result cached (target: <= 15 s wall);
5. the same again without xdist; outcomes per block must equal those of step 4.

Writes benchmarks/results/plugin_bench.{json,md}, and the summary table, report and
badge of the cached ``-n 2`` run as examples (plugin_bench_summary.txt, _report.json,
_badge.svg, _badge.json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CPU: dict[str, float] = {}
"""CPU seconds (user + sys) of each step's pytest processes, by step name."""


def _pytest(
    args: list[str], *, cwd: Path, env: dict[str, str], log: Path
) -> tuple[float, int, str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    CPU[log.stem] = round(cpu, 2)
    log.write_text(f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    print(
        f"  {seconds:8.1f} s wall {cpu:8.1f} s cpu  exit {done.returncode}  {' '.join(args[-4:])}",
        flush=True,
    )
    return seconds, done.returncode, done.stdout


def _summary(stdout: str) -> str:
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if "nnrag summary" in line), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("===")), len(lines))
    kept = [line for line in lines[start:end] if not line.startswith("nnrag wrote ")]
    return "\n".join(kept) + "\n"


def _outcomes(report_path: Path) -> dict[str, tuple[Any, ...]]:
    report = json.loads(report_path.read_text())
    return {
        block["id"]: (block["outcome"], block["stage_reached"], block["category"])
        for block in report["blocks"]
    }


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=Path, default=ROOT / "examples" / "repos.json")
    parser.add_argument("--cache", type=Path, default=None, help="nnrag cache (default: nnrag's)")
    parser.add_argument("--depth", default="forward")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--note", default="", help="a line added to the markdown summary")
    return parser.parse_args()


def main() -> None:
    args = _arguments()

    env = dict(os.environ)
    work = Path(tempfile.mkdtemp(prefix="nnrag-plugin-bench-"))
    logs = work / "logs"
    logs.mkdir()
    # `--opt=value`: a separate path argument would make pytest pick its rootdir from it.
    common = [f"--nnrag-repos={args.repos.resolve()}", f"--nnrag-depth={args.depth}"]
    if args.cache is not None:
        common.append(f"--nnrag-cache={args.cache.resolve()}")
    print(f"plugin bench in {work}", flush=True)

    warm_s, _, _ = _pytest([*common, "--collect-only"], cwd=work, env=env, log=logs / "warm.txt")
    collect_s, _, out = _pytest(
        [*common, "--collect-only"], cwd=work, env=env, log=logs / "collect.txt"
    )
    collected = next((line for line in out.splitlines() if "collected" in line), "")

    report_full, report_cached = work / "full.json", work / "cached.json"
    report_serial = work / "serial.json"
    badge = work / "badge.svg"
    parallel = ["-n", args.workers]
    full_s, full_code, _ = _pytest(
        [*common, *parallel, "--nnrag-report", str(report_full)],
        cwd=work,
        env=env,
        log=logs / "full.txt",
    )
    cached_s, cached_code, cached_out = _pytest(
        [*common, *parallel, "--nnrag-report", str(report_cached), "--nnrag-badge", str(badge)],
        cwd=work,
        env=env,
        log=logs / "cached.txt",
    )
    serial_s, _, _ = _pytest(
        [*common, "--nnrag-report", str(report_serial)],
        cwd=work,
        env=env,
        log=logs / "serial.txt",
    )

    full_report = json.loads(report_full.read_text())
    cached_before = sum(1 for block in full_report["blocks"] if block["cached"])
    cached_report = json.loads(report_cached.read_text())
    parity = _outcomes(report_cached) == _outcomes(report_serial)
    all_cached = all(block["cached"] for block in cached_report["blocks"])
    summary = cached_report["summary"]
    result = {
        "command": f"nice python benchmarks/plugin_bench.py --workers {args.workers}",
        "repos": str(args.repos),
        "depth": args.depth,
        "workers": args.workers,
        "collected": collected.strip(),
        "warmup_collection_s": round(warm_s, 2),
        "collection_warm_index_s": round(collect_s, 2),
        "full_run_s": round(full_s, 2),
        "full_run_exit": full_code,
        "full_run_results_already_cached": cached_before,
        "cached_rerun_s": round(cached_s, 2),
        "cached_rerun_exit": cached_code,
        "cached_rerun_target_s": 15.0,
        "all_results_cached": all_cached,
        "serial_cached_run_s": round(serial_s, 2),
        "outcomes_identical_with_and_without_xdist": parity,
        "blocks": summary["blocks"],
        "passed": summary["passed"],
        "pass_rate": summary["pass_rate"],
        "categories": summary["categories"],
        "cpu_s": CPU,
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        "cores": os.cpu_count(),
        "nnrag_version": cached_report["nnrag_version"],
        "torch_version": cached_report["torch_version"],
    }
    seconds = {"collect": collect_s, "full": full_s, "cached": cached_s, "serial": serial_s}
    save(result, cached_out, report_cached, badge)
    write_markdown(result, _summary(cached_out), seconds, repos=args.repos.name, note=args.note)
    print(json.dumps(result, indent=2))


def save(result: dict[str, Any], cached_out: str, report: Path, badge: Path) -> None:
    """The JSON result, the cached run's summary table, report and badge, in results/."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "plugin_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "plugin_bench_summary.txt").write_text(_summary(cached_out))
    shutil.copy(report, RESULTS / "plugin_bench_report.json")
    shutil.copy(badge, RESULTS / "plugin_bench_badge.svg")
    shutil.copy(badge.with_suffix(".json"), RESULTS / "plugin_bench_badge.json")


def write_markdown(
    result: dict[str, Any], table: str, seconds: dict[str, float], *, repos: str, note: str
) -> None:
    """``results/plugin_bench.md`` from what :func:`main` measured (``seconds``: wall times)."""
    workers, cached_before = result["workers"], result["full_run_results_already_cached"]
    md = [
        "# plugin bench",
        "",
        f"`{result['command']}` on `{repos}` (depth {result['depth']}); {result['collected']}.",
        "",
        f"Machine: {os.cpu_count()} cores shared with other jobs (1-minute load average "
        f"{result['load_average_1m_at_end']} at the end); CPU = user + sys of the pytest "
        "processes and their children.",
        "",
        "| step | wall | CPU |",
        "|---|---|---|",
        f"| collection, warm index (`--collect-only`) | {seconds['collect']:.1f} s "
        f"| {CPU['collect']} s |",
        f"| full run, `-n {workers}` ({cached_before} results already cached) "
        f"| {seconds['full']:.1f} s | {CPU['full']} s |",
        f"| re-run, every result cached, `-n {workers}` (target <= 15 s) "
        f"| {seconds['cached']:.1f} s | {CPU['cached']} s |",
        f"| re-run, cached, no xdist | {seconds['serial']:.1f} s | {CPU['serial']} s |",
        "",
        f"All results cached on re-run: {result['all_results_cached']}. "
        f"Outcomes identical with and without xdist: "
        f"{result['outcomes_identical_with_and_without_xdist']}.",
        "",
        f"Pass rate: {result['passed']}/{result['blocks']} ({result['pass_rate']:.1%}). "
        "Summary table of the cached run (plugin_bench_summary.txt):",
        "",
        "```",
        table.rstrip(),
        "```",
        "",
        "![badge](plugin_bench_badge.svg)",
        "",
    ]
    if note:
        md[2:2] = [note, ""]
    (RESULTS / "plugin_bench.md").write_text("\n".join(md))


if __name__ == "__main__":
    main()
