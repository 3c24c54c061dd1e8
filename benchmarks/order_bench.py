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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plugin_command import plugin_command  # benchmarks/ is not a package: found on sys.path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
COMPARED = ("outcome", "stage_reached", "failed_stage", "category")


def _load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _run(name: str, args: Sequence[str], *, work: Path, timeout: float) -> dict[str, Any]:
    """One pytest run in ``work`` with its own cache; its report and wall time."""
    report = work / f"{name}.json"
    command = plugin_command(
        work / "repos.json",
        work / f"cache-{name}",
        report,
        "--nnrag-timeout",
        str(timeout),
        *args,
    )
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


def report_seconds(report: dict[str, Any] | None) -> dict[str, float]:
    """Block id -> measured seconds (validation plus extraction) of a JSON run report."""
    return {
        b["id"]: float(b.get("duration_s") or 0) + float(b.get("extract_s") or 0)
        for b in (report["blocks"] if report else [])
    }


def share_balance(seconds: dict[str, float], cache: Path, repos: Path) -> dict[str, Any]:
    """The first run's harvest pass on two workers, replayed with measured block times:
    fixed shares by id (before) against blocks taken one at a time in cost order (now)."""
    from nnrag.config import load_settings
    from nnrag.workspace import Workspace
    from pytest_nnrag.schedule import block_estimates, order_by_cost

    workspace = Workspace(load_settings(repos, cache_dir=cache))
    blocks = [b for b in workspace.blocks() if b.id in seconds]
    estimates = block_estimates(workspace.index(), blocks)

    def fixed(ids: Sequence[str]) -> dict[str, Any]:
        return _ends([sum(seconds[i] for i in ids[k::2]) for k in (0, 1)])

    def taken(ids: Sequence[str]) -> dict[str, Any]:
        ends = [0.0, 0.0]
        for block_id in ids:  # the worker free first takes the next block
            ends[ends.index(min(ends))] += seconds[block_id]
        return _ends(ends)

    by_id = sorted(seconds)
    by_estimate = order_by_cost(by_id, str, recorded={}, estimates=estimates)
    by_recorded = order_by_cost(by_id, str, recorded=seconds, estimates={})
    known = [b.id for b in blocks]
    return {
        "blocks": len(blocks),
        "spearman": round(_spearman([estimates[i] for i in known], [seconds[i] for i in known]), 2),
        "total_s": round(sum(seconds.values()), 1),
        "longest_s": round(max(seconds.values(), default=0.0), 1),
        "fixed_by_id": fixed(by_id),
        "taken_by_id": taken(by_id),
        "taken_by_estimate": taken(by_estimate),
        "taken_by_recorded": taken(by_recorded),
        "taken_quick_first": taken(by_recorded[::-1]),
    }


def _spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Rank correlation of two equally long series (ties ranked by position)."""

    def ranks(values: Sequence[float]) -> list[int]:
        order = sorted(range(len(values)), key=lambda k: values[k])
        result = [0] * len(values)
        for rank, k in enumerate(order):
            result[k] = rank
        return result

    rx, ry = ranks(xs), ranks(ys)
    mean = (len(xs) - 1) / 2
    cov = sum((a - mean) * (b - mean) for a, b in zip(rx, ry, strict=True))
    var = sum((a - mean) ** 2 for a in rx)
    return cov / var if var else 0.0


def _ends(ends: list[float]) -> dict[str, Any]:
    return {"ends_s": [round(e, 1) for e in ends], "idle_s": round(max(ends) - min(ends), 1)}


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
    lines += ["", f"Replays with the code of commit {data.get('replay_commit', '?')}."]
    for key, title in (
        ("balance", "run A's measured block times"),
        ("replayed", f"the whole corpus, block times of {data.get('replay_times')}"),
    ):
        lines += _balance_lines(data.get(key), title)
    return "\n".join(lines) + "\n"


def _balance_lines(balance: dict[str, Any] | None, title: str) -> list[str]:
    lines: list[str] = []
    if balance:
        lines += [
            "",
            f"## The first run's harvest pass on two workers ({title})",
            "",
            f"{balance['blocks']} blocks, {balance['total_s']} s in all, the longest "
            f"{balance['longest_s']} s; the index estimate ranks them by time with Spearman "
            f"{balance['spearman']}. Replayed: when each worker ends, and how long the "
            "first to end idles until the other is done:",
            "",
            "| blocks split | worker ends s | idle s |",
            "|---|---|---|",
        ]
        for key, label in (
            ("fixed_by_id", "fixed shares, every 2nd block by id (before)"),
            ("taken_by_id", "taken one at a time, by id"),
            ("taken_by_estimate", "taken one at a time, index estimate first (now, fresh cache)"),
            ("taken_by_recorded", "taken one at a time, recorded duration first (now, next runs)"),
            ("taken_quick_first", "taken one at a time, recorded duration last (worst order)"),
        ):
            lines.append(f"| {label} | {balance[key]['ends_s']} | {balance[key]['idle_s']} |")
    return lines


def _measure(options: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Runs A and B, and their comparison."""
    a = _run("a", ["-n", "2", "--nnrag-order", "cost"], work=work, timeout=options.timeout)
    b = _run(
        "b", ["-p", "no:xdist", "--nnrag-order", "reverse"], work=work, timeout=options.timeout
    )
    return {
        "bench_command": " ".join(["python", "benchmarks/order_bench.py", *sys.argv[1:]]),
        "root": str(options.root),
        "paths": options.paths,
        "timeout": options.timeout,
        "work": str(work),
        "a": {k: v for k, v in a.items() if k != "report"},
        "b": {k: v for k, v in b.items() if k != "report"},
        "comparison": compare(a["report"], b["report"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/work/corpora/src/timm-1.0.31"))
    parser.add_argument("--paths", nargs="*", default=["timm/layers"])
    parser.add_argument("--name", default="timm")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--out", default="order_bench")
    parser.add_argument("--work", type=Path, default=None, help="folder for caches and logs")
    parser.add_argument(
        "--replay-times",
        type=Path,
        default=None,
        help="also replay the pass with the block times of a validate_bench JSON of the whole "
        "--root (its 'results': id -> [.., seconds, ..])",
    )
    parser.add_argument(
        "--replay-only",
        action="store_true",
        help="no pytest runs: replay the pass again (current code) on the last bench's runs",
    )
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="order-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    repos = work / "repos.json"
    source = {"name": options.name, "path": str(options.root), "paths": options.paths}
    repos.write_text(json.dumps([source], indent=2))
    whole = {"name": options.name, "path": str(options.root)}
    (work / "all.json").write_text(json.dumps([whole], indent=2))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
    )
    if options.replay_only:  # the runs of the last bench, replays with the current code
        data = json.loads((RESULTS / f"{options.out}.json").read_text())
        work = Path(data["work"])
        data["replay_command"] = " ".join(["python", "benchmarks/order_bench.py", *sys.argv[1:]])
    else:
        data = _measure(options, work)
    data["replay_commit"] = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    a_report = json.loads((work / "a.json").read_text())
    data["balance"] = share_balance(report_seconds(a_report), work / "cache-a", work / "repos.json")
    if options.replay_times:  # another run's measured times, e.g. validate_bench's
        replayed = json.loads(options.replay_times.read_text())[0]["results"]
        seconds = {block_id: float(row[3]) for block_id, row in replayed.items()}
        data["replay_times"] = str(options.replay_times)
        data["replayed"] = share_balance(seconds, work / "cache-all", work / "all.json")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{options.out}.json").write_text(json.dumps(data, indent=2) + "\n")
    (RESULTS / f"{options.out}.md").write_text(_markdown(data))
    print(_markdown(data))


if __name__ == "__main__":
    main()
