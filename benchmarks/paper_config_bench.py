"""The NN-RAG paper's own repo_config.json, read unchanged, materialized from PyPI, run cold.

Assembles the configuration of the reference implementation
(``/work/shared/reference/nn-rag-repo_config.json``: same keys, ``paths``, ``priority``)
with each repository replaced by its released distribution on PyPI (``pip download
--no-deps``, the wheel unpacked under ``/work/corpora/<dist>/unpacked``, shared between
helpers under ``flock /work/corpora/.lock``). Repositories without a release on PyPI are
left out and listed.

A wheel is laid out as the installed package, not as the repository: a ``paths`` entry
under ``src/`` (transformers' src layout) is mapped to the same path without ``src/``
(the wheel's root is the repository's ``src/``); every other entry is kept as written, so
an entry naming a folder the wheel does not ship (``projects/...``) matches nothing and is
reported as such. Every mapping is written to the results.

Then runs the real pytest plugin cold (a fresh cache: index + extract + validate to
``forward``) with ``-n 2`` in a subprocess, sampling the RSS of the whole process tree,
and reports per source: blocks, closed, import, instantiate, forward, the ten largest
failure groups with an example each, wall time, peak RSS, block-file lines (median, p99,
max) and extraction time (median, p95, max; measured per block in-process on the built
index with the emit cache off, after the run, when the report does not carry it).

It also runs the reference implementation's own block-name generator
(``ab.rag.make_blocks_name`` from the ``nn-rag`` wheel on PyPI) on the same trees and
reports how many of its names nnrag found as blocks.

Usage (benchmark environment, under nice, machine shared):

    PYTHONPATH=$PWD nice /work/benchenv/bin/python benchmarks/paper_config_bench.py
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plugin_command import plugin_command  # benchmarks/ is not a package: found on sys.path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
REFERENCE = Path("/work/shared/reference/nn-rag-repo_config.json")
CORPORA = Path("/work/corpora")

RELEASES: dict[str, str] = {
    "pytorch/vision": "torchvision==0.29.1",
    "huggingface/pytorch-image-models": "timm==1.0.31",
    "pytorch/pytorch": "torch==2.13.0",
    "open-mmlab/mmdetection": "mmdet==3.3.0",
    "open-mmlab/mmsegmentation": "mmsegmentation==1.2.2",
    "open-mmlab/mmpose": "mmpose==1.3.2",
    "open-mmlab/mmpretrain": "mmpretrain==1.2.0",
    "open-mmlab/mmengine": "mmengine==0.10.7",
    "open-mmlab/mmcv": "mmcv-lite==2.2.0",
    "open-mmlab/mmocr": "mmocr==1.0.1",
    "huggingface/transformers": "transformers==4.57.6",
    "pyg-team/pytorch_geometric": "torch-geometric==2.8.1",
    "ultralytics/yolov8": "ultralytics==8.4.190",
    "facebookresearch/segment-anything": "segment-anything==1.0",
}
"""Each repository's released distribution (mmcv: the pure-Python ``mmcv-lite`` build)."""

LEFT_OUT: dict[str, str] = {
    "facebookresearch/detectron2": "no release on PyPI",
    "ultralytics/yolov5": "no release by its authors on PyPI (`yolov5` is a third-party "
    "repackaging with another layout)",
    "WongKinYiu/yolov7": "no release on PyPI (`yolov7` there is an unrelated placeholder)",
    "WongKinYiu/yolov9": "no release on PyPI (`yolov9` there is an unrelated placeholder)",
    "facebookresearch/mae": "no release on PyPI (`mae` there is an unrelated package)",
    "facebookresearch/dino": "no release on PyPI (`dino` there is an unrelated package)",
    "facebookresearch/Mask2Former": "no release on PyPI",
    "facebookresearch/detr": "no release by its authors on PyPI (`detr` 0.1.4 is a stub)",
}

STAGE_ORDER = ("parse", "compile", "closed", "import", "instantiate", "forward", "backward")


# --------------------------------------------------------------------------- corpora


def materialize(requirement: str) -> Path:
    """The unpacked wheel of ``requirement`` under /work/corpora (downloaded once, shared)."""
    import fcntl

    dist = re.split(r"[=<>!~ ]", requirement, maxsplit=1)[0]
    folder = CORPORA / dist
    unpacked = folder / "unpacked"
    CORPORA.mkdir(parents=True, exist_ok=True)
    with open(CORPORA / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            version = requirement.split("==", 1)[1]
            stem = dist.replace("-", "_").lower()
            if unpacked.is_dir() and any(
                p.name.lower().startswith(f"{stem}-{version}") for p in unpacked.iterdir()
            ):
                return unpacked
            folder.mkdir(parents=True, exist_ok=True)
            wheels = [p for p in folder.glob("*.whl") if f"-{version}" in p.name]
            if not wheels:
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "download",
                        "-q",
                        "--no-deps",
                        "--only-binary",
                        ":all:",
                        requirement,
                        "-d",
                        str(folder),
                    ],
                    check=True,
                )
                wheels = [p for p in folder.glob("*.whl") if f"-{version}" in p.name]
            with zipfile.ZipFile(wheels[0]) as archive:
                archive.extractall(unpacked)
            return unpacked
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def mapped_paths(paths: list[str], root: Path) -> tuple[list[str], list[str]]:
    """The reference ``paths`` as they lie in the wheel, and a note per changed entry."""
    out: list[str] = []
    notes: list[str] = []
    for path in paths:
        if path.startswith("src/") and not (root / path).exists():
            out.append(path[len("src/") :])
            notes.append(f"{path} -> {path[len('src/') :]} (src layout: the wheel is src/)")
        else:
            out.append(path)
            if not any((root / p).exists() for p in (path, path + ".py")):
                notes.append(f"{path}: not in the wheel (matches nothing; kept as written)")
    return out, notes


def assemble(work: Path) -> tuple[Path, dict[str, Any]]:
    """Write the configuration (reference keys, ``path`` to each unpacked wheel)."""
    reference = json.loads(REFERENCE.read_text())
    config: dict[str, Any] = {}
    info: dict[str, Any] = {"sources": {}, "left_out": {}}
    for key, entry in reference.items():
        requirement = RELEASES.get(key)
        if requirement is None:
            info["left_out"][key] = LEFT_OUT.get(key, "no release on PyPI")
            continue
        root = materialize(requirement)
        paths, notes = mapped_paths(list(entry.get("paths", [])), root)
        config[key] = {
            "path": str(root),
            "priority": entry.get("priority", 0),
            "paths": paths,
            "description": entry.get("description", ""),
        }
        info["sources"][key] = {"distribution": requirement, "root": str(root), "paths": notes}
    repos = work / "repos.json"
    repos.write_text(json.dumps(config, indent=2))
    return repos, info


# --------------------------------------------------------------------------- running


class TreeSampler:
    """Samples the process tree of a run each second: the peak RSS of the whole tree, of one
    nnrag process (the pytest controller, an xdist worker, a sandbox server and the process in
    it that forks the blocks) and of one block's sandboxed child (its own allocations, capped by
    the sandbox's per-block memory limit: a block child is a leaf whose parent runs the server);
    and the CPU seconds each xdist worker's subtree (the worker, its sandbox server, the blocks
    it forks) has used, so the run can say when each worker last had work.
    """

    SERVER = "nnrag.validate.server"
    """What the command line of a sandbox server, and of every process it forks, contains."""

    BUSY_CPU_S = 0.3
    """CPU seconds within one second's sample that count a worker as busy in it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_total = 0
        self.peak_single = 0
        self.peak_nnrag = 0
        self.peak_block = 0
        self.started = time.monotonic()
        self.worker_cpu: dict[int, list[tuple[float, float]]] = defaultdict(list)
        """Per xdist worker pid: (seconds since start, CPU seconds of its subtree so far)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _is_block_child(self, proc: Any) -> bool:
        parent = proc.parent()
        return (
            parent is not None
            and not proc.children()
            and self.SERVER in " ".join(proc.cmdline())
            and self.SERVER in " ".join(parent.cmdline())
        )

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(1.0):
            with contextlib.suppress(psutil.Error):
                top = psutil.Process(self.pid)
                total = 0
                for proc in [top, *top.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        rss = proc.memory_info().rss
                        total += rss
                        self.peak_single = max(self.peak_single, rss)
                        if self._is_block_child(proc):
                            self.peak_block = max(self.peak_block, rss)
                        else:
                            self.peak_nnrag = max(self.peak_nnrag, rss)
                self.peak_total = max(self.peak_total, total)
                now = time.monotonic() - self.started
                for worker in top.children():
                    with contextlib.suppress(psutil.Error):
                        if self.SERVER not in " ".join(worker.cmdline()):
                            self.worker_cpu[worker.pid].append((now, _subtree_cpu(worker)))

    def workers(self) -> dict[str, Any]:
        """When each worker last had work (a second with at least ``BUSY_CPU_S`` of CPU), and
        the straggler time: from the first worker running out of work to the last."""
        last_busy: list[float] = []
        busy_s: list[float] = []
        for samples in self.worker_cpu.values():
            busy = [
                t
                for (_, before), (t, after) in itertools.pairwise(samples)
                if after - before >= self.BUSY_CPU_S
            ]
            if busy:
                last_busy.append(busy[-1])
                busy_s.append(float(len(busy)))
        return {
            "workers": len(last_busy),
            "last_busy_s": sorted(round(t, 1) for t in last_busy),
            "busy_s": sorted(round(t, 1) for t in busy_s),
            "straggler_s": round(max(last_busy) - min(last_busy), 1) if last_busy else None,
        }


def _subtree_cpu(proc: Any) -> float:
    """CPU seconds of ``proc`` and its descendants, living or reaped (a reaped child's CPU is
    in its parent's ``children_*`` times, a living one's in its own)."""
    import psutil

    total = 0.0
    for each in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = each.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


class LogTap:
    """Copies a run's output to its log line by line and notes when the harvest pass (the
    plugin's ``harvest pass:`` progress lines) was first and last heard from."""

    MARK = "harvest pass:"
    OVER = re.compile(r"harvest pass: over, .* then ([0-9.]+) s waiting")
    """Each worker's last line of the pass: its share is over, after waiting this long."""

    def __init__(self, stream: Any, log: Path, started: float) -> None:
        self.first_harvest_s: float | None = None
        self.last_harvest_s: float | None = None
        self.shares_over: list[tuple[float, float]] = []
        """(seconds since the start, seconds it waited) per worker whose share ended."""
        self._stream, self._log, self._started = stream, log, started
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with open(self._log, "w") as out:
            for line in iter(self._stream.readline, ""):
                out.write(line)
                if self.MARK in line:
                    now = round(time.perf_counter() - self._started, 1)
                    self.first_harvest_s = self.first_harvest_s or now
                    self.last_harvest_s = now
                    if over := self.OVER.search(line):
                        self.shares_over.append((now, float(over.group(1))))

    def join(self) -> None:
        self._thread.join()


def run_plugin(repos: Path, work: Path, *, workers: str, depth: str) -> dict[str, Any]:
    cache = work / "cache"
    report = work / "report.json"
    command = plugin_command(repos, cache, report, "-n", workers, f"--nnrag-depth={depth}")
    run_dir = work / "run"
    run_dir.mkdir()
    log = work / "pytest.log"
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=run_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    tap = LogTap(proc.stdout, log, start)
    with TreeSampler(proc.pid) as sampler:
        code = proc.wait()
    tap.join()
    wall = time.perf_counter() - start
    return {
        "command": " ".join(command),
        "exit": code,
        "wall_s": round(wall, 1),
        "phases_s": {
            "harvest_pass_first_heard": tap.first_harvest_s,
            "harvest_pass_last_heard": tap.last_harvest_s,
            "harvest_pass_shares_over": [{"at": t, "waited": w} for t, w in tap.shares_over],
        },
        "workers": sampler.workers(),
        "peak_rss_tree_gb": round(sampler.peak_total / 2**30, 2),
        "peak_rss_process_gb": round(sampler.peak_single / 2**30, 2),
        "peak_rss_nnrag_process_gb": round(sampler.peak_nnrag / 2**30, 2),
        "peak_rss_block_child_gb": round(sampler.peak_block / 2**30, 2),
        "report": str(report),
        "cache": str(cache),
        "log": str(log),
        "load_1m_at_end": round(os.getloadavg()[0], 2),
    }


# --------------------------------------------------------------------------- analysis


def _reached(block: dict[str, Any], stage: str) -> bool:
    reached = block.get("stage_reached")
    return reached is not None and STAGE_ORDER.index(reached) >= STAGE_ORDER.index(stage)


def _message_key(message: str) -> str:
    first = (message or "").strip().splitlines()[0] if message else ""
    first = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", first)
    first = re.sub(r"\d+", "N", first)
    return first[:160]


def _quantiles(values: list[float], *qs: float) -> list[float]:
    if not values:
        return [0.0 for _ in qs]
    ordered = sorted(values)
    return [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in qs]


def file_lines(path: str | None) -> int | None:
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)
    except OSError:
        return None


def extraction_times(repos: Path, cache: Path, ids: list[str]) -> dict[str, float]:
    """Seconds to extract each block in-process on the built index (emit cache not used)."""
    from nnrag.config import load_settings
    from nnrag.extract.block import extract
    from nnrag.workspace import Workspace

    workspace = Workspace(load_settings(repos, cache_dir=cache))
    index = workspace.index()
    by_id = {block.id: block for block in workspace.blocks()}
    times: dict[str, float] = {}
    for block_id in ids:
        block = by_id.get(block_id)
        if block is None:
            continue
        start = time.perf_counter()
        with contextlib.suppress(Exception):
            extract(index, block)
        times[block_id] = time.perf_counter() - start
    return times


def reference_names(info: dict[str, Any], config: dict[str, Any]) -> dict[str, set[str]]:
    """Block names the reference implementation's own generator finds on the same trees."""
    import importlib.util

    wheel = Path(materialize("nn-rag==2.2.4"))
    # the module file alone: importing the ``ab.rag`` package runs its cache set-up
    spec = importlib.util.spec_from_file_location(
        "nnrag_reference_names", wheel / "ab" / "rag" / "make_blocks_name.py"
    )
    assert spec is not None
    assert spec.loader is not None
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)

    names: dict[str, set[str]] = {}
    for key, entry in config.items():
        root = Path(entry["path"])
        files = [
            p
            for p in ref._walk_paths(root, entry["paths"], [])
            if not ({"tests", "test", "docs", "examples"} & {s.lower() for s in p.parts})
        ]
        found: set[str] = set()
        for file in files:
            found.update(ref._iter_nn_block_names_from_file(file, False, False, False, []))
        names[key] = found
    return names


def partial_report(repos: Path, cache: Path, index_cache: Path) -> dict[str, Any]:
    """A report from the result cache of a run that was stopped before its end.

    Every discovered block is listed; one with no stored result has ``outcome`` "not-run".
    """
    import sqlite3

    from nnrag.config import load_settings
    from nnrag.workspace import Workspace

    ids = [b.id for b in Workspace(load_settings(repos, cache_dir=index_cache)).blocks()]
    db = sqlite3.connect(f"file:{cache / 'results.sqlite'}?mode=ro", uri=True)
    stored: dict[str, dict[str, Any]] = {}
    for (value,) in db.execute("SELECT value FROM results"):
        row = json.loads(value)
        stored[row["block_id"]] = row
    files = dict(db.execute("SELECT block_id, file FROM extractions").fetchall())
    blocks = []
    for block_id in ids:
        row = stored.get(block_id)
        blocks.append(
            {
                "id": block_id,
                "source": block_id.split(":", 1)[0],
                "outcome": "not-run" if row is None else ("passed" if row["passed"] else "failed"),
                "stage_reached": row["stage_reached"] if row else None,
                "failed_stage": row["failed_stage"] if row else None,
                "category": row["category"] if row else None,
                "message": row["message"] if row else "",
                "file": (row or {}).get("file") or files.get(block_id),
            }
        )
    return {"blocks": blocks, "partial": True}


def _source_figures(
    items: list[dict[str, Any]], not_run: int, times: dict[str, float]
) -> tuple[dict[str, Any], list[int]]:
    """One source's row of the analysis, and the line counts of its block files."""
    lines = [n for n in (file_lines(b.get("file")) for b in items) if n is not None]
    seconds = [times[b["id"]] for b in items if b["id"] in times]
    groups: Counter[tuple[str, str, str]] = Counter()
    example: dict[tuple[str, str, str], str] = {}
    for b in items:
        if b["outcome"] == "passed":
            continue
        key = (b.get("failed_stage") or "", b.get("category") or "", _message_key(b["message"]))
        groups[key] += 1
        example.setdefault(key, f"{b['id']}: {(b['message'] or '')[:300]}")
    total = max(len(items), 1)
    figures = {
        "blocks": len(items),
        "not_run": not_run,
        **{
            stage: sum(_reached(b, stage) for b in items)
            for stage in ("closed", "import", "instantiate", "forward")
        },
        "forward_rate": round(sum(_reached(b, "forward") for b in items) / total, 3),
        "closed_rate": round(sum(_reached(b, "closed") for b in items) / total, 3),
        "lines": dict(zip(("median", "p99", "max"), _line_stats(lines), strict=True)),
        "extract_s": dict(
            zip(
                ("median", "p95", "max"),
                _round(_quantiles(seconds, 0.5, 0.95, 1.0)),
                strict=True,
            )
        ),
        "failure_groups": [
            {
                "stage": k[0],
                "category": k[1],
                "message": k[2],
                "count": n,
                "example": example[k],
            }
            for k, n in groups.most_common(10)
        ],
    }
    return figures, lines


def analyze(
    report: dict[str, Any],
    run: dict[str, Any],
    repos: Path,
    info: dict[str, Any],
    *,
    extract_sample: int = 0,
    retime: bool = False,
) -> dict[str, Any]:
    every: list[dict[str, Any]] = report["blocks"]
    not_run = Counter(b["source"] for b in every if b["outcome"] == "not-run")
    blocks = [b for b in every if b["outcome"] != "not-run"]
    config = json.loads(repos.read_text())
    has_times = not retime and any("extract_s" in b for b in blocks)
    ids = [b["id"] for b in every]
    if extract_sample and len(ids) > extract_sample:
        ids = ids[:: -(-len(ids) // extract_sample)]
    times = (
        {b["id"]: b["extract_s"] for b in blocks if b.get("extract_s") is not None}
        if has_times
        else extraction_times(repos, Path(run.get("index_cache") or run["cache"]), ids)
    )
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for block in blocks:
        by_source[block["source"]].append(block)
    for source in not_run:
        by_source.setdefault(source, [])
    per_source: dict[str, Any] = {}
    all_lines: list[int] = []
    for source in sorted(by_source):
        per_source[source], lines = _source_figures(
            by_source[source], not_run.get(source, 0), times
        )
        all_lines.extend(lines)
    seconds_all = list(times.values())
    total = len(blocks)
    names = reference_names(info, config)
    found_names = defaultdict(set)
    for b in every:
        found_names[b["source"]].add(b["id"].rsplit(":", 1)[-1])
    ref_all = set().union(*names.values()) if names else set()
    ours_all = set().union(*found_names.values()) if found_names else set()
    openmmlab = [s for s in by_source if s.startswith("open-mmlab/")]
    return {
        "discovered": len(every),
        "not_run": sum(not_run.values()),
        "extract_timed": len(times),
        "blocks": total,
        "forward": sum(_reached(b, "forward") for b in blocks),
        "forward_rate": round(sum(_reached(b, "forward") for b in blocks) / max(total, 1), 3),
        "forward_rate_openmmlab": _rate(blocks, openmmlab),
        "forward_rate_transformers": _rate(blocks, ["huggingface/transformers"]),
        "closed_rate_min_source": min(
            (s["closed_rate"] for s in per_source.values() if s["blocks"]), default=None
        ),
        "lines": dict(zip(("median", "p99", "max"), _line_stats(all_lines), strict=True)),
        "files_over_20000_lines": sum(n > 20000 for n in all_lines),
        "extract_s": dict(
            zip(
                ("median", "p95", "max"),
                _round(_quantiles(seconds_all, 0.5, 0.95, 1.0)),
                strict=True,
            )
        ),
        "extract_times_from": "report" if has_times else "in-process re-extraction after the run",
        "reference_names": {
            "generator": "ab.rag.make_blocks_name from nn-rag==2.2.4 (PyPI), run on the same trees",
            "names": len(ref_all),
            "found": len(ref_all & ours_all),
            "rate": round(len(ref_all & ours_all) / max(len(ref_all), 1), 3),
            "per_source": {
                k: {"names": len(v), "found": len(v & found_names.get(k, set()))}
                for k, v in sorted(names.items())
            },
            "missing_examples": sorted(ref_all - ours_all)[:40],
        },
        "per_source": per_source,
    }


def _rate(blocks: list[dict[str, Any]], sources: list[str]) -> float | None:
    chosen = [b for b in blocks if b["source"] in sources]
    if not chosen:
        return None
    return round(sum(_reached(b, "forward") for b in chosen) / len(chosen), 3)


def _pct(value: float | None) -> str:
    return "n/a (none validated)" if value is None else f"{value:.1%}"


def _line_stats(lines: list[int]) -> list[int]:
    if not lines:
        return [0, 0, 0]
    p99 = _quantiles([float(n) for n in lines], 0.99)[0]
    return [int(statistics.median(lines)), int(p99), max(lines)]


def _round(values: list[float]) -> list[float]:
    return [round(v, 4) for v in values]


# --------------------------------------------------------------------------- output


def _timeline(run: dict[str, Any]) -> list[str]:
    """The run's phases and its workers' last busy seconds, when the run recorded them."""
    phases, workers = run.get("phases_s"), run.get("workers")
    if not phases or not workers:
        return []
    first, last = phases["harvest_pass_first_heard"], phases["harvest_pass_last_heard"]
    lines = []
    over = phases.get("harvest_pass_shares_over") or []
    if first is not None and last is not None and over:
        lines.append(
            f"Timeline: index and collection until the harvest pass's first progress line at "
            f"{first / 60:.1f} min; the pass over at {last / 60:.1f} min (each worker's share "
            "over after waiting for the others: "
            + ", ".join(f"{o['waited']:.1f} s" for o in over)
            + f"); the verdicts after the freeze until {run['wall_s'] / 60:.1f} min."
        )
    elif first is not None and last is not None:
        lines.append(
            f"Timeline: index and collection until the harvest pass's first progress line at "
            f"{first / 60:.1f} min, its last at {last / 60:.1f} min (every 50 blocks), the "
            f"verdicts after the freeze until {run['wall_s'] / 60:.1f} min."
        )
    if workers["workers"]:
        lines.append(
            f"Workers ({workers['workers']}): last second with work at "
            + ", ".join(f"{t / 60:.1f}" for t in workers["last_busy_s"])
            + f" min (busy {', '.join(f'{t / 60:.1f}' for t in workers['busy_s'])} min each); "
            f"straggler time (first worker out of work to the last): "
            f"**{workers['straggler_s']} s**."
        )
    return [*lines, ""] if lines else []


def markdown(result: dict[str, Any]) -> str:
    run, totals = result["run"], result["totals"]
    md = [
        "# paper-config bench: the NN-RAG reference repo_config.json, from PyPI, cold",
        "",
        f"`{result['command']}`. Machine: {os.cpu_count()} cores, shared with other jobs "
        f"(load {result['load_before']} before, {run['load_1m_at_end']} at the end); "
        f"torch {result['torch']}; depth `forward`, `-n 2`, fresh cache.",
        "",
        f"Cold run: **{run['wall_s'] / 60:.1f} min** wall (exit {run['exit']}), peak RSS "
        f"{run['peak_rss_process_gb']} GB in one process, {run['peak_rss_tree_gb']} GB for the "
        "whole process tree (sampled each second)"
        + (
            f"; {run['peak_rss_nnrag_process_gb']} GB in one nnrag process (controller, worker, "
            f"sandbox server), {run['peak_rss_block_child_gb']} GB in one block's sandboxed "
            "child (capped by the per-block memory limit)."
            if run.get("peak_rss_nnrag_process_gb") is not None
            else "."
        )
        if run.get("exit") is not None
        else f"The run was stopped after {run['wall_s'] / 60:.1f} min wall; its peak RSS was not "
        "recorded (the sampler belongs to the stopped driver).",
        "",
        *_timeline(run),
        f"Discovered **{totals['discovered']}** blocks; validated {totals['blocks']}"
        + (
            f" (**{totals['not_run']} not run**: the run was stopped before its end)"
            if totals["not_run"]
            else ""
        )
        + ".",
        "",
        f"Validated **{totals['blocks']}**, forward **{totals['forward']} "
        f"({totals['forward_rate']:.1%})**; OpenMMLab sources together "
        f"{_pct(totals['forward_rate_openmmlab'])}, transformers "
        f"{_pct(totals['forward_rate_transformers'])}. Lowest closed rate of a source: "
        f"{_pct(totals['closed_rate_min_source'])}. Block-file lines median/p99/max "
        f"{totals['lines']['median']}/{totals['lines']['p99']}/{totals['lines']['max']} "
        f"({totals['files_over_20000_lines']} over 20,000). Extraction s median/p95/max "
        f"{totals['extract_s']['median']}/{totals['extract_s']['p95']}/"
        f"{totals['extract_s']['max']} ({totals['extract_times_from']}, "
        f"{totals['extract_timed']} blocks timed).",
        "",
        "| source | validated | not run | closed | import | instantiate | forward "
        "| lines med/p99/max | extract s med/p95/max |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for source, s in totals["per_source"].items():
        md.append(
            f"| {source} | {s['blocks']} | {s['not_run']} | {s['closed']} | {s['import']} "
            f"| {s['instantiate']} "
            f"| {s['forward']} ({s['forward_rate']:.0%}) | {s['lines']['median']}/"
            f"{s['lines']['p99']}/{s['lines']['max']} | {s['extract_s']['median']}/"
            f"{s['extract_s']['p95']}/{s['extract_s']['max']} |"
        )
    ref = totals["reference_names"]
    md += [
        "",
        f"Reference implementation's block names ({ref['generator']}): {ref['found']} of "
        f"{ref['names']} found ({ref['rate']:.1%}). The published list of 1,287 names is not "
        "available here (no access to the repository); this is the same generator on the "
        "released distributions.",
        "",
        "## Sources",
        "",
    ]
    for key, entry in result["config"]["sources"].items():
        notes = "; ".join(entry["paths"]) or "paths as written"
        md.append(f"- {key}: `{entry['distribution']}` — {notes}")
    md += ["", "Left out:", ""]
    md += [f"- {key}: {why}" for key, why in result["config"]["left_out"].items()]
    md += ["", "## Largest failure groups per source", ""]
    for source, s in totals["per_source"].items():
        md.append(f"### {source}")
        md.append("")
        for g in s["failure_groups"]:
            md.append(
                f"- {g['count']} x {g['stage']}/{g['category']}: `{g['message']}` — e.g. "
                f"`{g['example'][:200]}`"
            )
        md.append("")
    return "\n".join(md)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="2")
    parser.add_argument("--depth", default="forward")
    parser.add_argument("--work", type=Path, default=None, help="folder (default: a temp one)")
    parser.add_argument("--only", nargs="*", default=None, help="reference keys to keep")
    parser.add_argument("--name", default="paper_config_bench", help="results file stem")
    parser.add_argument(
        "--analyze",
        action="store_true",
        help="do not run: analyze the run in --work (its report, or its result cache when "
        "the run was stopped early; run.json or the wall/RSS given below)",
    )
    parser.add_argument("--wall-s", type=float, default=0.0, help="with --analyze, no run.json")
    parser.add_argument("--extract-sample", type=int, default=0, help="time N blocks (0: all)")
    parser.add_argument(
        "--retime-extraction",
        action="store_true",
        help="time each block's extraction in-process after the run, even where the report "
        "has times",
    )
    parser.add_argument(
        "--index-cache",
        type=Path,
        default=None,
        help="with --analyze: a cache holding the same index, for discovery and extraction "
        "timing (default: the run's)",
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="nnrag-paper-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    load_before = round(os.getloadavg()[0], 2)
    repos, info = assemble(work) if not args.analyze else (work / "repos.json", {})
    if args.analyze:
        info = assemble(Path(tempfile.mkdtemp()))[1]
    if args.only and not args.analyze:
        config = json.loads(repos.read_text())
        repos.write_text(json.dumps({k: v for k, v in config.items() if k in args.only}, indent=2))
    print(f"paper bench in {work}", flush=True)
    if args.analyze:
        saved = work / "run.json"
        run = (
            json.loads(saved.read_text())
            if saved.is_file()
            else {
                "command": "(stopped before its end)",
                "exit": None,
                "wall_s": args.wall_s,
                "peak_rss_tree_gb": None,
                "peak_rss_process_gb": None,
                "report": str(work / "report.json"),
                "cache": str(work / "cache"),
                "load_1m_at_end": round(os.getloadavg()[0], 2),
            }
        )
    else:
        run = run_plugin(repos, work, workers=args.workers, depth=args.depth)
        (work / "run.json").write_text(json.dumps(run, indent=2))
    print(json.dumps(run, indent=2), flush=True)
    report_file = Path(run["report"])
    report = (
        json.loads(report_file.read_text())
        if report_file.is_file()
        else partial_report(repos, Path(run["cache"]), args.index_cache or Path(run["cache"]))
    )
    if args.index_cache is not None:
        run["index_cache"] = str(args.index_cache)
    totals = analyze(
        report,
        run,
        repos,
        info,
        extract_sample=args.extract_sample,
        retime=args.retime_extraction,
    )
    import torch

    result = {
        "command": "PYTHONPATH=$PWD nice /work/benchenv/bin/python benchmarks/paper_config_bench.py"
        + (f" --only {' '.join(args.only)}" if args.only else ""),
        "torch": torch.__version__,
        "load_before": load_before,
        "config": info,
        "repos_json": json.loads(repos.read_text()),
        "run": run,
        "totals": totals,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(result) + "\n")
    print(markdown(result))


if __name__ == "__main__":
    main()
