"""Verdicts that do not depend on the order: the plugin twice on one corpus, fresh caches.

Run A: ``pytest -n 2`` in the default order (``--nnrag-order cost``: likely-slow first).
Run B: ``pytest -p no:xdist --nnrag-order reverse`` (one process, slow last). Each run gets
its own empty cache, so each does its own harvest pass. The two JSON reports are compared
block by block (outcome, stage reached, failed stage, category); any difference is listed.

Also: how evenly the first run's harvest pass splits between two workers, computed from run
A's measured block times (``duration_s + extract_s``), for the shares the pass used before
(blocks by id, every 2nd) and now (blocks by the index's estimate, costliest first, every
2nd): the seconds the faster share waits for the slower one.

Run: ``TMPDIR=/work/tmp/me PYTHONPATH=$PWD nice -n 10 .venv/bin/python
benchmarks/order_bench.py --root /work/corpora/src/timm-1.0.31 --paths timm/layers``.
Writes benchmarks/results/order_bench.{json,md} (``--out NAME``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
COMPARED = ("outcome", "stage_reached", "failed_stage", "category")


def _load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _run(name: str, args: Sequence[str], *, work: Path, timeout: float) -> dict[str, Any]:
    """One pytest run in ``work`` with its own cache; its report and wall time."""
    report = work / f"{name}.json"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--nnrag-repos",
        str(work / "repos.json"),
        "--nnrag-cache",
        str(work / f"cache-{name}"),
        "--nnrag-report",
        str(report),
        "--nnrag-timeout",
        str(timeout),
        *args,
    ]
    load_before = _load()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    (work / f"{name}.log").write_text(f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    print(f"{name}: {seconds:.1f} s, exit {done.returncode}", flush=True)
    return {
        "command": " ".join(["pytest", *command[3:]]),
        "seconds": round(seconds, 1),
        "exit": done.returncode,
        "load_before": load_before,
        "load_after": _load(),
        "report": json.loads(report.read_text()) if report.exists() else None,
    }


def _verdicts(report: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    blocks = report["blocks"] if report else []
    return {b["id"]: {k: b.get(k) for k in (*COMPARED, "message")} for b in blocks}


def compare(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """Blocks whose verdict differs between two reports (and blocks only one has)."""
    first, second = _verdicts(a), _verdicts(b)
    differing = {
        block_id: {"a": first[block_id], "b": second[block_id]}
        for block_id in sorted(set(first) & set(second))
        if any(first[block_id][k] != second[block_id][k] for k in COMPARED)
    }
    return {
        "blocks_a": len(first),
        "blocks_b": len(second),
        "only_a": sorted(set(first) - set(second)),
        "only_b": sorted(set(second) - set(first)),
        "differing": differing,
        "passed_a": sum(v["outcome"] == "passed" for v in first.values()),
        "passed_b": sum(v["outcome"] == "passed" for v in second.values()),
    }


def share_balance(report: dict[str, Any] | None, cache: Path, repos: Path) -> dict[str, Any]:
    """Two harvest shares of the measured times: by id (before) and by estimate (now)."""
    from nnrag.config import load_settings
    from nnrag.workspace import Workspace
    from pytest_nnrag.schedule import block_estimates, order_by_cost

    seconds = {
        b["id"]: float(b.get("duration_s") or 0) + float(b.get("extract_s") or 0)
        for b in (report["blocks"] if report else [])
    }
    workspace = Workspace(load_settings(repos, cache_dir=cache))
    blocks = [b for b in workspace.blocks() if b.id in seconds]
    estimates = block_estimates(workspace.index(), blocks)

    def wait(ids: Sequence[str]) -> dict[str, float]:
        shares = [sum(seconds[i] for i in ids[k::2]) for k in (0, 1)]
        return {
            "share_s": [round(s, 1) for s in shares],
            "wait_s": round(abs(shares[0] - shares[1]), 1),
        }

    by_id = sorted(seconds)
    by_cost = order_by_cost(sorted(seconds), str, recorded={}, estimates=estimates)
    oracle = order_by_cost(sorted(seconds), str, recorded=seconds, estimates={})
    return {
        "blocks": len(blocks),
        "total_s": round(sum(seconds.values()), 1),
        "by_id": wait(by_id),
        "by_estimate": wait(by_cost),
        "by_recorded_duration": wait(oracle),
    }


def _markdown(data: dict[str, Any]) -> str:
    cmp = data["comparison"]
    lines = [
        "# order_bench",
        "",
        "Verdicts that do not depend on the order: the plugin twice on one corpus, each run with "
        "a fresh cache; run A `-n 2` in the default order (likely-slow first), run B one process "
        "(`-p no:xdist`) in the reverse order. Command: `" + data["bench_command"] + "`.",
        "",
        f"Corpus: `{data['root']}` paths {data['paths']}; timeout {data['timeout']} s per block.",
        "",
        "| run | command | wall s | load before | load after | exit |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("a", "b"):
        run = data[name]
        lines.append(
            f"| {name.upper()} | `{run['command']}` | {run['seconds']} | {run['load_before']} | "
            f"{run['load_after']} | {run['exit']} |"
        )
    lines += [
        "",
        f"Blocks: A {cmp['blocks_a']} ({cmp['passed_a']} passed), B {cmp['blocks_b']} "
        f"({cmp['passed_b']} passed); only in A: {len(cmp['only_a'])}, only in B: "
        f"{len(cmp['only_b'])}; **differing verdicts: {len(cmp['differing'])}**.",
        "",
    ]
    for block_id, pair in cmp["differing"].items():
        a, b = pair["a"], pair["b"]
        lines.append(
            f"- `{block_id}`: A {a['outcome']}/{a['failed_stage']}/{a['category']} "
            f"({a['message'][:120]!r}), B {b['outcome']}/{b['failed_stage']}/{b['category']} "
            f"({b['message'][:120]!r})"
        )
    balance = data.get("balance")
    if balance:
        lines += [
            "",
            "## Harvest pass shares of two workers (run A's measured block times)",
            "",
            f"{balance['blocks']} blocks, {balance['total_s']} s in all. The faster share "
            "waits for the slower one at the end of the pass:",
            "",
            "| shares by | share seconds | wait s |",
            "|---|---|---|",
        ]
        for key, label in (
            ("by_id", "block id, every 2nd (before)"),
            ("by_estimate", "index estimate, costliest first, every 2nd (now, fresh cache)"),
            ("by_recorded_duration", "recorded duration (now, after one run)"),
        ):
            lines.append(f"| {label} | {balance[key]['share_s']} | {balance[key]['wait_s']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/work/corpora/src/timm-1.0.31"))
    parser.add_argument("--paths", nargs="*", default=["timm/layers"])
    parser.add_argument("--name", default="timm")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--out", default="order_bench")
    parser.add_argument("--work", type=Path, default=None, help="folder for caches and logs")
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="order-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    repos = work / "repos.json"
    source = {"name": options.name, "path": str(options.root), "paths": options.paths}
    repos.write_text(json.dumps([source], indent=2))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
    )
    a = _run("a", ["-n", "2", "--nnrag-order", "cost"], work=work, timeout=options.timeout)
    b = _run(
        "b", ["-p", "no:xdist", "--nnrag-order", "reverse"], work=work, timeout=options.timeout
    )
    data: dict[str, Any] = {
        "bench_command": " ".join(["python", "benchmarks/order_bench.py", *sys.argv[1:]]),
        "root": str(options.root),
        "paths": options.paths,
        "timeout": options.timeout,
        "work": str(work),
        "a": {k: v for k, v in a.items() if k != "report"},
        "b": {k: v for k, v in b.items() if k != "report"},
        "comparison": compare(a["report"], b["report"]),
        "balance": share_balance(a["report"], work / "cache-a", repos),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{options.out}.json").write_text(json.dumps(data, indent=2) + "\n")
    (RESULTS / f"{options.out}.md").write_text(_markdown(data))
    print(_markdown(data))


if __name__ == "__main__":
    main()
