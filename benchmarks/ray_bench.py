"""Local executor vs the Ray executor (1 and 2 CPUs) on timm 1.0.31: wall, overhead per block.

Run (benchmark env with ray installed, under nice; the machine is shared):
    PYTHONPATH=$PWD nice /work/benchenv/bin/python benchmarks/ray_bench.py --sample 120
Writes benchmarks/results/ray_bench.json and .md.

Each configuration validates the same blocks to ``forward`` from a fresh result cache (the
index is built once per cache before the clock starts). ``--sample N`` takes N blocks evenly
spaced over timm's sorted block ids (the whole corpus takes ~10 min per configuration here).
Per configuration: start-up (Ray instance, actors with a warm sandbox), the driver's share
(cache look-ups, extraction, block files: until the first job is sent), total wall of the
run, the sum of per-block validation times, and, for Ray, each block's round trip
(sent -> outcome on the driver) minus its validation time on the worker.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from nnrag.config import load_settings
from nnrag.model import BlockJob, BlockRef, JobOutcome, RayOptions, ValidationResult
from nnrag.validate.executors import Executor, LocalExecutor, validate_many
from nnrag.workspace import Workspace

TIMM = Path("/work/corpora/src/timm-1.0.31")
RESULTS = Path(__file__).parent / "results"


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Timed:
    """Wraps an executor; notes when the driver has prepared every job and sends the first."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.name = inner.name
        self.first_sent: float | None = None
        self.jobs = 0

    def run(self, jobs: Sequence[BlockJob]) -> Iterator[tuple[BlockJob, JobOutcome]]:
        self.first_sent = time.perf_counter()
        self.jobs = len(jobs)
        return self.inner.run(jobs)

    def close(self) -> None:
        self.inner.close()


def workspace(folder: Path, timeout_s: float) -> Workspace:
    repos = folder / "repos.json"
    repos.write_text(
        json.dumps({"sources": [{"name": "timm", "path": str(TIMM), "paths": ["timm"]}]})
    )
    settings = load_settings(repos, cache_dir=folder / "cache", environ={}, timeout_s=timeout_s)
    return Workspace(settings)


def sample(blocks: Sequence[BlockRef], n: int | None) -> list[BlockRef]:
    if not n or n >= len(blocks):
        return list(blocks)
    step = len(blocks) / n
    return [blocks[int(i * step)] for i in range(n)]


def run_config(name: str, cpus: int | None, n: int | None, timeout_s: float) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"nnrag-ray-bench-{name}-"))
    space = workspace(folder, timeout_s)
    started = time.perf_counter()
    space.build()
    index_s = time.perf_counter() - started
    blocks = sample(space.blocks(), n)
    load_before = load()
    started = time.perf_counter()
    executor: Any
    if cpus is None:
        executor = LocalExecutor(space.sandbox())
        space.sandbox().start()
    else:
        from nnrag.validate.ray_executor import RayExecutor

        executor = RayExecutor(RayOptions(local_cpus=cpus))
        executor.wait_ready()
    startup_s = time.perf_counter() - started
    timed = Timed(executor)
    started = time.perf_counter()
    results: list[ValidationResult] = []
    try:
        results = list(validate_many(space, blocks, executor=timed))
    finally:
        wall_s = time.perf_counter() - started
        round_trips = dict(getattr(executor, "round_trips", {}))
        workers = len(getattr(executor, "workers", [])) or 1
        timed.close()
        space.close()
    prepare_s = (timed.first_sent or started) - started
    validated = [r for r in results if r.stage_reached not in (None, "parse", "compile")]
    durations = [r.duration_s for r in results]
    row: dict[str, Any] = {
        "config": name,
        "folder": str(folder),
        "cpus": cpus,
        "actors": workers,
        "blocks": len(results),
        "jobs": timed.jobs,
        "index_s": round(index_s, 2),
        "startup_s": round(startup_s, 2),
        "prepare_s": round(prepare_s, 2),
        "wall_s": round(wall_s, 2),
        "sum_block_s": round(sum(durations), 2),
        "passed": sum(r.passed for r in results),
        "sandboxed": len(validated),
        "load_before": load_before,
        "load_after": load(),
        "outcomes": {r.block_id: [r.stage_reached, r.failed_stage, r.category] for r in results},
    }
    jobs = {r.block_id: r.duration_s for r in results[len(results) - timed.jobs :]}
    if round_trips:  # Ray: what a block costs beyond its own validation on the worker
        extra = [round_trips[b] - jobs[b] for b in round_trips if b in jobs]
        row["overhead_per_block_ms"] = {
            "median": round(1000 * statistics.median(extra), 1),
            "mean": round(1000 * statistics.fmean(extra), 1),
            "p95": round(1000 * sorted(extra)[int(0.95 * (len(extra) - 1))], 1),
        }
    # worker time not spent validating, per job: (workers x run wall - validation) / jobs;
    # dispatch, driver work between jobs, and the tail where some workers have run out
    run_s = wall_s - prepare_s
    if jobs:
        row["run_s"] = round(run_s, 2)
        row["slack_per_block_ms"] = round(
            1000 * (workers * run_s - sum(jobs.values())) / len(jobs), 1
        )
    return row


def agreement(reference: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """How many blocks got the same (stage reached, failed stage, category) in both runs."""
    a, b = reference["outcomes"], other["outcomes"]
    differ = sorted(k for k in a if a[k] != b.get(k))
    pairs = {k: [a[k], b.get(k)] for k in differ}
    return {"same": len(a) - len(differ), "of": len(a), "differ": pairs}


def markdown(report: dict[str, Any]) -> str:
    rows = report["runs"]
    lines = [
        "# ray_bench: local executor vs Ray executor on timm 1.0.31",
        "",
        f"Command: `{report['command']}`  ",
        f"Machine: {report['machine']}; **shared with other engineers' jobs** (load average "
        "before/after each run in the table): wall-clock numbers are pessimistic and noisy.  ",
        f"Blocks: {report['blocks']} ({report['subset']}), depth forward, "
        f"{report['timeout_s']:.0f} s timeout per block, fresh result cache per run.",
        "",
        "| config | actors | startup s | driver prepare s | run s | total wall s | sum of block s "
        "| slack per block ms | Ray overhead per block ms (median / mean / p95) | passed "
        "| same outcome as local | load before -> after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|",
    ]
    for row in rows:
        over = row.get("overhead_per_block_ms")
        over_text = f"{over['median']} / {over['mean']} / {over['p95']}" if over else "-"
        same = row.get("agreement")
        same_text = f"{same['same']} of {same['of']}" if same else "(reference)"
        lines.append(
            f"| {row['config']} | {row['actors']} | {row['startup_s']} | {row['prepare_s']} "
            f"| {row.get('run_s', '-')} | {row['wall_s']} | {row['sum_block_s']} "
            f"| {row.get('slack_per_block_ms', '-')} | {over_text} | {row['passed']} "
            f"| {same_text} | {row['load_before']} -> {row['load_after']} |"
        )
    lines += ["", "Columns:", ""]
    lines += [
        "- startup: Ray instance + actors with a warm sandbox (Ray), or the local sandbox's "
        "start; not in the wall time.",
        "- driver prepare: result-cache look-ups, extraction, block files, until the first "
        "job is sent (the same code for every executor).",
        "- run: first job sent -> last outcome stored; total wall = prepare + run.",
        "- slack per block: (actors x run - sum of block validation times) / jobs: worker "
        "time spent on anything but validating (dispatch, driver work between jobs, and the "
        "tail where the last blocks run while other actors are idle).",
        "- Ray overhead per block: round trip on the driver (sent -> outcome) minus the "
        "block's validation time on the worker: object store, actor call, file write, "
        "result transfer.",
        "",
    ]
    for row in rows:
        same = row.get("agreement")
        if same and same["differ"]:
            lines.append(f"Blocks whose outcome differs from the local run ({row['config']}):")
            lines.append("")
            for block, (local, other) in same["differ"].items():
                lines.append(f"- `{block}`: local {local}, {row['config']} {other}")
            lines.append("")
    return "\n".join([*lines, *scaling(report)])


def shipping(run: dict[str, Any], n: int | None, timeout_s: float) -> dict[str, Any]:
    """Bytes shipped once per job (nnrag) and per block (job, file, result), from a run's cache.

    The jobs are prepared again (``revalidate``: no cache hits) from the run's index; the
    results are the run's own, as stored in its result cache.
    """
    import io
    import pickle
    import sqlite3
    import zipfile

    import nnrag
    from nnrag.validate.results import result_from_dict
    from nnrag.validate.stages import prepare_block

    package = Path(nnrag.__file__).parent
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(package.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.write(file, file.relative_to(package.parent).as_posix())
    folder = Path(run["folder"])
    settings = load_settings(
        folder / "repos.json", cache_dir=folder / "cache", environ={}, timeout_s=timeout_s
    )
    from dataclasses import replace

    space = Workspace(replace(settings, revalidate=True))
    jobs = [
        prepared
        for block in sample(space.blocks(), n)
        if isinstance(prepared := prepare_block(space, block), BlockJob)
    ]
    with sqlite3.connect(folder / "cache" / "results.sqlite") as db:
        rows = [json.loads(value) for (value,) in db.execute("SELECT value FROM results")]
    space.close()
    outcomes = [len(pickle.dumps(JobOutcome(result=result_from_dict(r)))) for r in rows]
    job_bytes = [len(pickle.dumps(job)) for job in jobs]
    files = [job.size for job in jobs]
    return {
        "package_zip_bytes": len(buffer.getvalue()),
        "jobs": len(jobs),
        "job_pickle_bytes_mean": round(statistics.fmean(job_bytes)),
        "block_file_bytes_mean": round(statistics.fmean(files)),
        "block_file_bytes_max": max(files),
        "result_pickle_bytes_mean": round(statistics.fmean(outcomes)),
        "result_pickle_bytes_max": max(outcomes),
    }


def scaling(report: dict[str, Any]) -> list[str]:
    """How a run scales to N nodes, with this run's numbers."""
    sizes = report.get("shipping") or {}
    runs = {row["config"]: row for row in report["runs"]}
    local = runs.get("local", {})
    per_block = (
        f"{sizes['job_pickle_bytes_mean']} B job + {sizes['block_file_bytes_mean']} B block "
        f"file (max {sizes['block_file_bytes_max']}) out, {sizes['result_pickle_bytes_mean']} "
        f"B result (max {sizes['result_pickle_bytes_max']}) back"
        if sizes
        else "(not measured)"
    )
    prepare = local.get("prepare_s") or 0.0
    blocks = local.get("blocks") or 1
    jobs = local.get("jobs") or 1
    mean_block_s = (local.get("sum_block_s") or 0.0) / jobs
    driver_ms = local.get("slack_per_block_ms") or 0.0
    feedable = (1000 * mean_block_s / driver_ms) if driver_ms > 0 else float("inf")
    return [
        "## Scaling to N nodes (on paper)",
        "",
        "Shipped once per run: nnrag itself (`runtime_env` `py_modules`, "
        f"{sizes.get('package_zip_bytes', '?')} B zipped, uploaded once, unpacked once per "
        "node). Started once per actor (one per CPU by default): a Ray worker and its warm "
        "sandbox server (a torch import: the startup column; in the CLI the actors start "
        "while the driver prepares). Never shipped: the sources, the index and the result "
        "cache stay on the driver; block files are dependency-closed, so a worker needs only "
        "torch (the driver's version, checked at start) and the blocks' third-party "
        "requirements installed.",
        "",
        f"Shipped per block: {per_block}; harvested recipes ride along with a job when "
        "there are any. A block file goes through the object store under its sha256, which "
        "the worker checks before writing it to a content-addressed path.",
        "",
        "Serial on the driver: (1) before the first job, the prepare phase (cache look-ups, "
        f"extraction with cold memos, categories, block files): {prepare} s for {blocks} "
        f"blocks here, ~{1000 * prepare / blocks:.0f} ms per block on this loaded machine; "
        "it does not shrink with N. (2) Per outcome: dispatch (harvest look-up, `ray.put`) "
        f"and the cache write, ~{driver_ms} ms per block (the local run's slack). The workers' "
        f"share is the validation itself, {mean_block_s:.2f} s per block here. So N nodes of "
        "c CPUs take about startup + prepare + sum of block s / (N c) + the last block's "
        f"time, until N c reaches ~{feedable:.0f} actors, where the driver's per-outcome "
        "work (2) becomes the limit; past that, the next step is to overlap (1) with "
        "validation and to batch cache writes. Largest-first order keeps the tail short.",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=120, help="blocks (0: all)")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument(
        "--configs", default="local,ray-1,ray-2", help="comma-separated: local, ray-1, ray-2"
    )
    parser.add_argument("--out", default="ray_bench")
    parser.add_argument(
        "--render", action="store_true", help="only re-write the .md from the .json"
    )
    args = parser.parse_args()
    if args.render:
        report = json.loads((RESULTS / f"{args.out}.json").read_text())
        if "shipping" not in report:
            report["shipping"] = shipping(report["runs"][-1], args.sample or None, args.timeout)
            (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=2) + "\n")
        (RESULTS / f"{args.out}.md").write_text(markdown(report))
        return
    runs = []
    for config in args.configs.split(","):
        cpus = None if config == "local" else int(config.split("-")[1])
        print(f"{config}: running (load {load()})", flush=True)
        row = run_config(config, cpus, args.sample or None, args.timeout)
        print(
            f"{config}: wall {row['wall_s']} s, startup {row['startup_s']} s, "
            f"{row['passed']} of {row['blocks']} passed",
            flush=True,
        )
        runs.append(row)
    reference = next((r for r in runs if r["config"] == "local"), None)
    for row in runs:
        if reference is not None and row is not reference:
            row["agreement"] = agreement(reference, row)
    import ray

    report = {
        "command": "PYTHONPATH=$PWD nice /work/benchenv/bin/python benchmarks/ray_bench.py "
        f"--sample {args.sample} --timeout {args.timeout:g} --configs {args.configs}",
        "machine": f"Python {platform.python_version()}, {os.cpu_count()} cpus, "
        f"Ray {ray.__version__}",
        "blocks": runs[0]["blocks"],
        "subset": f"{args.sample} evenly spaced over the sorted block ids"
        if args.sample
        else "every block",
        "timeout_s": args.timeout,
        "runs": runs,
    }
    report["shipping"] = shipping(runs[-1], args.sample or None, args.timeout)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(report))
    print(f"wrote {RESULTS / args.out}.json and .md")


if __name__ == "__main__":
    main()
