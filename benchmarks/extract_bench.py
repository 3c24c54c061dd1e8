"""Extraction benchmark: emit, compile, closed, import, equivalence, determinism, timing.

Runs on every discovered block of timm 1.0.31, torchvision 0.29.1 and torch-geometric 2.8.1
(local copies under /work/corpora/src indexed as ``path`` sources through the real
Workspace). Results: benchmarks/results/extract_bench.{json,md}.

    nice python benchmarks/extract_bench.py                 # everything
    nice python benchmarks/extract_bench.py --corpora timm --limit 50 --no-equivalence

Phases:
1. two emission runs, each in a fresh process with its own clean cache (index built from
   scratch): per-block extraction time, compile, closure problems, ``check_code``
   findings; the two runs' files are compared byte for byte;
2. import: every emitted file executed in a fresh interpreter (``python -I``, empty
   working directory, corpora off ``sys.path``; the source packages verified not importable);
3. equivalence (torch-geometric): the original class (installed with
   ``pip install --target`` into a folder only that subprocess sees) and the extracted
   class are built with the recipe the probe finds for the extracted file, from the same
   seed: identical state_dict keys, shapes and values, identical forward outputs (instances
   of a source class such as ``SelectOutput`` compared field by field, since the extracted
   file defines its own copy of the class). The original runs twice; if it disagrees with
   itself the block is ``original-nondeterministic``, not equivalent.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from equivalence import run_workers  # noqa: E402 - benchmarks/ is not a package

RESULTS = HERE / "results"
CORPORA = {
    "timm": ("/work/corpora/src/timm-1.0.31", "timm", "timm==1.0.31"),
    "torchvision": ("/work/corpora/src/torchvision-0.29.1", "torchvision", "torchvision==0.29.1"),
    "torch_geometric": (
        "/work/corpora/src/torch_geometric-2.8.1",
        "torch_geometric",
        "torch-geometric==2.8.1",
    ),
}
TARGETS = {
    "closed": {"timm": 98.0, "torchvision": 95.0, "torch_geometric": 98.0},
    "import": {"timm": 97.0, "torchvision": 90.0, "torch_geometric": 97.0},
}
PYG_TARGET = Path(tempfile.gettempdir()) / "nnrag-bench-pyg"


# --------------------------------------------------------------------------- phase 1: emit


def emit_run(corpora: list[str], cache: Path, out: Path, limit: int | None) -> dict[str, object]:
    """Index from a clean cache, extract every block, write files; runs in its own process."""
    from nnrag.check.static import check_code
    from nnrag.config import load_settings
    from nnrag.errors import NnragError
    from nnrag.extract.block import write_block
    from nnrag.report import format_diagnostic
    from nnrag.workspace import Workspace

    repos = cache / "repos.json"
    cache.mkdir(parents=True, exist_ok=True)
    sources = [
        {"name": name, "path": CORPORA[name][0], "paths": [CORPORA[name][1]]} for name in corpora
    ]
    repos.write_text(json.dumps({"sources": sources}), encoding="utf-8")
    workspace = Workspace(load_settings(repos, cache_dir=cache, environ={}))
    started = time.perf_counter()
    workspace.build()
    index = workspace.index()
    blocks = workspace.blocks()
    index_s = time.perf_counter() - started
    from nnrag.extract.block import extract

    rows = []
    if limit is not None:  # an even sample of each corpus (sorted ids cluster by package)
        chosen = []
        for name in corpora:
            mine = [b for b in blocks if b.source == name]
            step = max(1, len(mine) // limit)
            chosen += mine[::step][:limit]
        blocks = tuple(chosen)
    for block in blocks:
        row: dict[str, object] = {"id": block.id, "source": block.source}
        started, cpu = time.perf_counter(), time.process_time()
        try:
            extracted = extract(index, block)
        except NnragError as error:
            row.update(
                seconds=time.perf_counter() - started,
                cpu_seconds=time.process_time() - cpu,
                emitted=False,
                error=str(error),
            )
            rows.append(row)
            continue
        row["seconds"] = time.perf_counter() - started
        row["cpu_seconds"] = time.process_time() - cpu
        path = write_block(extracted, out / block.source / block.module)
        findings = check_code(
            extracted.code,
            filename=str(path),
            source_packages=index.source_packages(block.source),
        )
        row.update(
            emitted=True,
            file=str(path),
            sha256=hashlib.sha256(extracted.code.encode()).hexdigest(),
            problems=[f"{p.category}: {format_diagnostic(p)}" for p in extracted.problems],
            findings=[f"{f.category}: {format_diagnostic(f, path=path.name)}" for f in findings],
            lines=extracted.code.count("\n"),
            source_packages=sorted(index.source_packages(block.source)),
        )
        rows.append(row)
    return {"index_s": index_s, "rows": rows}


FIRST_BLOCKS = {
    "timm": "timm:timm.layers.mlp:Mlp",
    "torchvision": "torchvision:torchvision.models.resnet:ResNet",
    "torch_geometric": "torch_geometric:torch_geometric.nn.conv.gcn_conv:GCNConv",
}


def first_run(corpora: list[str], cache: Path, block_id: str) -> dict[str, object]:
    """One extraction in this fresh process from the warm index in ``cache``."""
    started = time.perf_counter()
    from nnrag.config import load_settings
    from nnrag.extract.block import extract
    from nnrag.workspace import Workspace

    imported = time.perf_counter()
    workspace = Workspace(load_settings(cache / "repos.json", cache_dir=cache, environ={}))
    index = workspace.index()
    loaded = time.perf_counter()
    block = workspace.find(block_id)
    found = time.perf_counter()
    extracted = extract(index, block)
    done = time.perf_counter()
    return {
        "id": block_id,
        "import_ms": round(1000 * (imported - started), 1),
        "load_index_ms": round(1000 * (loaded - imported), 1),
        "find_ms": round(1000 * (found - loaded), 1),
        "first_extract_ms": round(1000 * (done - found), 1),
        "lines": extracted.code.count("\n"),
    }


# --------------------------------------------------------------------------- phase 2: import

IMPORT_WORKER = textwrap.dedent(
    r"""
    import importlib.util, json, signal, sys, traceback
    sys.path[:] = [p for p in sys.path if p and "/work/corpora" not in p and p != "."]
    jobs = json.load(open(sys.argv[1]))
    out = open(sys.argv[2], "a")
    start = int(sys.argv[3])
    def alarm(signum, frame):
        raise TimeoutError("import took more than 60 s")
    signal.signal(signal.SIGALRM, alarm)
    import torch  # noqa: F401  (imported once: the measurement is about the files)
    for position in range(start, len(jobs)):
        job = jobs[position]
        visible = [p for p in job["source_packages"] if importlib.util.find_spec(p) is not None]
        row = {"position": position, "id": job["id"], "ok": False}
        if visible:
            row.update(category="harness", message=f"source packages importable: {visible}")
        else:
            signal.alarm(60)
            try:
                name = f"nnrag_bench_{position}"
                spec = importlib.util.spec_from_file_location(name, job["file"])
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                spec.loader.exec_module(module)
                cls = getattr(module, job["id"].rsplit(":", 1)[1])
                row["ok"] = isinstance(cls, type)
            except BaseException as error:
                top = (getattr(error, "name", "") or "").split(".")[0]
                if isinstance(error, ModuleNotFoundError):
                    internal = top in job["source_packages"]
                    category = "source-import" if internal else "missing-external"
                elif isinstance(error, NameError):
                    category = "unresolved-name"
                elif isinstance(error, (FileNotFoundError, OSError)):
                    category = "resource-file"
                elif isinstance(error, TimeoutError):
                    category = "timeout"
                else:
                    category = "runtime-error"
                row.update(category=category, message=f"{type(error).__name__}: {error}"[:300])
            finally:
                signal.alarm(0)
        out.write(json.dumps(row) + "\n")
        out.flush()
    """
)


# --------------------------------------------------------------------------- phase 3: equivalence

EQUIVALENCE_WORKER = textwrap.dedent(
    r"""
    import importlib, json, os, sys
    sys.path[:] = [p for p in sys.path if p and "/work/corpora" not in p and p != "."]
    sys.path.insert(0, sys.argv[4])  # the pip --target folder with the original package
    sys.path.insert(0, BENCHMARKS)
    sys.path.insert(0, REPOSITORY)  # this checkout's nnrag (probe), not an installed one
    jobs = json.load(open(sys.argv[1]))
    out = open(sys.argv[2], "a")
    start = int(sys.argv[3])
    import torch
    from equivalence import EXACT, compare_blocks
    from nnrag.validate.probe.runner import run_block

    def compare(job):
        messages = []
        run_block({"path": job["file"], "class_name": job["cls"], "depth": "forward",
                   "seed": 0, "timeout_s": 60, "source_packages": job["source_packages"]},
                  send=messages.append, violations=[])
        result = [m for m in messages if m.get("kind") == "result"][-1]
        if result.get("failed_stage"):
            return {"status": "not-probed", "message": f"{result['failed_stage']}: "
                    f"{result.get('category')}: {result.get('message', '')[:200]}"}
        extracted = getattr(sys.modules["nnrag_block"], job["cls"])
        original = getattr(importlib.import_module(job["module"]), job["cls"])
        row = compare_blocks(extracted, original, result["recipe"],
                             lambda name: job["module"] + ":" + name, tolerance=EXACT)
        # this benchmark's word for it: bit-identical state_dict values and outputs
        row["status"] = {"identical": "equivalent"}.get(row["status"], row["status"])
        if result["recipe"].get("lossy"):
            row["recipe_lossy"] = result["recipe"]["lossy"]
        return row

    for position in range(start, len(jobs)):
        job = jobs[position]
        pid = os.fork()
        if pid == 0:
            import signal
            signal.alarm(120)
            try:
                row = compare(job)
            except BaseException as error:
                message = f"{type(error).__name__}: {error}"[:300]
                row = {"status": "harness-error", "message": message}
            row.update(position=position, id=job["id"])
            out.write(json.dumps(row) + "\n"); out.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            out.write(json.dumps({"position": position, "id": job["id"], "status": "crash",
                                  "message": f"child exit status {status}"}) + "\n"); out.flush()
    """
)


# --------------------------------------------------------------------------- driver


def percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def note(failures: dict[str, dict], key: str, block: str, message: str) -> None:
    """Count one failure under ``key`` and keep up to three examples."""
    bucket = failures.setdefault(key, {"count": 0, "examples": []})
    bucket["count"] += 1
    if len(bucket["examples"]) < 3:
        bucket["examples"].append(f"{block}: {message}"[:400])


def summarize(
    runs: list[dict], imports: list[dict], equivalence: list[dict], corpora: list[str]
) -> dict[str, object]:
    first, second = runs
    rows = first["rows"]
    digests = {r["id"]: r.get("sha256") for r in second["rows"]}
    by_import = {r["id"]: r for r in imports}
    summary: dict[str, object] = {}
    for name in corpora:
        mine = [r for r in rows if r["source"] == name]
        emitted = [r for r in mine if r.get("emitted")]
        closed = [r for r in emitted if not r["findings"]]
        no_problems = [r for r in emitted if not r["problems"]]
        imported = [r for r in emitted if by_import.get(r["id"], {}).get("ok")]
        same = [r for r in mine if r.get("sha256") and digests.get(r["id"]) == r.get("sha256")]
        times = sorted(1000.0 * r["seconds"] for r in mine)
        cpu = sorted(1000.0 * r.get("cpu_seconds", r["seconds"]) for r in mine)
        failures: dict[str, dict] = {}
        for r in mine:
            if not r.get("emitted"):
                note(failures, "emit:internal-error", r["id"], r.get("error", ""))
                continue
            for finding in r["findings"]:
                note(failures, "closed:" + finding.split(":", 1)[0], r["id"], finding)
            result = by_import.get(r["id"])
            if result is not None and not result.get("ok"):
                key = "import:" + result.get("category", "?")
                note(failures, key, r["id"], result.get("message", ""))
        summary[name] = {
            "blocks": len(mine),
            "emitted_compiles_pct": percent(len(emitted), len(mine)),
            "closed_pct": percent(len(closed), len(mine)),
            "closure_without_problems_pct": percent(len(no_problems), len(mine)),
            "imports_pct": percent(len(imported), len(mine)),
            "byte_identical_pct": percent(len(same), len(mine)),
            "extract_ms_median": round(statistics.median(times), 2) if times else None,
            "extract_ms_p95": round(times[int(0.95 * (len(times) - 1))], 2) if times else None,
            "extract_cpu_ms_median": round(statistics.median(cpu), 2) if cpu else None,
            "extract_cpu_ms_p95": round(cpu[int(0.95 * (len(cpu) - 1))], 2) if cpu else None,
            "failures": dict(sorted(failures.items(), key=lambda kv: -kv[1]["count"])),
        }
    if equivalence:
        counts = collections.Counter(r["status"] for r in equivalence)
        # a block whose original disagrees with itself counts as compared and not equivalent
        compared = counts["equivalent"] + counts["DIFFERENT"] + counts["original-nondeterministic"]
        summary["torch_geometric_equivalence"] = {
            "blocks": len(equivalence),
            "compared": compared,
            "equivalent": counts["equivalent"],
            "original_nondeterministic": counts["original-nondeterministic"],
            "equivalent_pct_of_compared": percent(counts["equivalent"], compared),
            "statuses": dict(counts),
            "examples": {
                status: [
                    f"{r['id']}: {r.get('message', '')}"
                    for r in equivalence
                    if r["status"] == status
                ][:3]
                for status in counts
                if status != "equivalent"
            },
        }
    summary["index_s"] = [round(r["index_s"], 2) for r in runs]
    return summary


def ensure_pyg() -> Path | None:
    if (PYG_TARGET / "torch_geometric" / "__init__.py").is_file():
        return PYG_TARGET
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--target",
            str(PYG_TARGET),
            CORPORA["torch_geometric"][2],
        ],
        check=False,
    )
    return PYG_TARGET if done.returncode == 0 else None


def _equivalence_lines(summary: dict[str, object]) -> list[str]:
    lines: list[str] = []
    equivalence = summary.get("torch_geometric_equivalence")
    if isinstance(equivalence, dict):
        lines += [
            "",
            "## Equivalence (torch-geometric, original installed with pip --target)",
            "",
            f"Compared {equivalence['compared']} of {equivalence['blocks']} blocks "
            f"(the others: probe found no recipe, or the original itself fails with it): "
            f"**{equivalence['equivalent']} equivalent "
            f"({equivalence['equivalent_pct_of_compared']}%)** (state_dict keys, shapes, values "
            "from the same seed; forward outputs bit-identical; outputs that are instances of a "
            "source class, like SelectOutput, compared field by field). The original is run "
            "twice from the same seed: "
            f"{equivalence['original_nondeterministic']} compared blocks disagree with "
            "themselves (`original-nondeterministic`, counted as not equivalent).",
            "",
            f"Statuses: {equivalence['statuses']}",
        ]
        for status, examples in equivalence["examples"].items():
            lines.append(f"- {status}: " + "; ".join(examples))
    return lines


def _failure_lines(summary: dict[str, object]) -> list[str]:
    lines = ["", "## Failures by category (up to 3 examples each)", ""]

    for name in CORPORA:
        s = summary.get(name)
        if not isinstance(s, dict):
            continue
        lines.append(f"### {name}")
        if not s["failures"]:
            lines.append("none")
        for key, bucket in s["failures"].items():
            lines.append(
                f"- **{key}** ({bucket['count']}): "
                + " | ".join(f"`{e}`" for e in bucket["examples"])
            )
        lines.append("")
    return lines


def write_markdown(summary: dict[str, object], command: str) -> str:
    lines = [
        "# Extraction benchmark",
        "",
        f"Command: `{command}`  ",
        f"Machine: Python {platform.python_version()}, {os.cpu_count()} cpus, shared with other "
        "engineers' jobs; load average (1, 5, 15 min) "
        f"{summary['load_average']['start']} at the start, "
        f"{summary['load_average']['after_emission']} after the emission runs, "
        f"{summary['load_average']['end']} at the end: wall-clock timings are pessimistic.",
        "",
        "How extraction time is measured (`median ms`, `p95 ms`): wall-clock time of "
        "`extract(index, block)` (resolve + emit, no file writing); `CPU ms`: the process CPU "
        "time of the same call (`time.process_time`), which a loaded machine inflates much "
        "less than wall-clock time. Both per block, in one process "
        "that first builds the index from a clean cache and then extracts every block of the "
        "three corpora in id order (timm, torch_geometric, torchvision). The per-index memos of "
        "resolve and emit are shared by all blocks of that process, so a block whose units an "
        "earlier block already analysed is cheaper; the first blocks pay for the analysis.",
        "",
        "| corpus | blocks | emits + compiles | closed (check_code) | closure w/o problems | "
        "imports (fresh interpreter) | byte-identical (2 clean runs) | median ms | p95 ms | "
        "median CPU ms | p95 CPU ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in CORPORA:
        s = summary.get(name)
        if not isinstance(s, dict):
            continue
        imported = (
            f"{s['imports_pct']}% (target {TARGETS['import'][name]}%)"
            if summary.get("imports_run", True)
            else "not run (--no-import)"
        )
        lines.append(
            f"| {name} | {s['blocks']} | {s['emitted_compiles_pct']}% | {s['closed_pct']}% "
            f"(target {TARGETS['closed'][name]}%) | {s['closure_without_problems_pct']}% | "
            f"{imported} | "
            f"{s['byte_identical_pct']}% | {s['extract_ms_median']} | {s['extract_ms_p95']} | "
            f"{s.get('extract_cpu_ms_median')} | {s.get('extract_cpu_ms_p95')} |"
        )
    first = summary.get("first_extraction")
    if isinstance(first, list) and first:
        lines += [
            "",
            "First single extraction in a fresh process from the warm index of emission run 1 "
            "(`--first-run`; every memo cold):",
            "",
            "| block | import nnrag ms | load index ms | find ms | first extract ms | lines |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {f['id']} | {f['import_ms']} | {f['load_index_ms']} | {f['find_ms']} | "
            f"{f['first_extract_ms']} | {f['lines']} |"
            for f in first
        ]
    lines += _equivalence_lines(summary)
    lines += _failure_lines(summary)
    return "\n".join(lines) + "\n"


def emission_runs(work: Path, corpora: list[str], limit: int | None) -> list[dict[str, Any]]:
    """Two emission runs, each in a fresh process from a clean cache (byte-identity)."""
    runs = []
    for number in (1, 2):
        cache, out = work / f"cache{number}", work / f"out{number}"
        out.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            __file__,
            "--corpora",
            ",".join(corpora),
            "--emit-run",
            str(cache),
            str(out),
        ]
        if limit:
            command += ["--limit", str(limit)]
        print(f"emission run {number} ...", flush=True)
        subprocess.run(command, check=True)
        runs.append(json.loads((out / "run.json").read_text()))
    return runs


def first_extractions(work: Path, corpora: list[str]) -> list[dict[str, Any]]:
    """Per corpus, a first extraction in a fresh process from the warm index (cache1)."""
    first: list[dict] = []  # a first extraction in a fresh process, warm index (cache1)
    for name in corpora:
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--corpora",
                ",".join(corpora),
                "--first-run",
                str(work / "cache1"),
                FIRST_BLOCKS[name],
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        first.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return first


def equivalence_runs(emitted: list[dict[str, Any]], corpora: list[str]) -> list[dict[str, Any]]:
    """Each closed torch-geometric block against the original installed with pip --target."""
    equivalence: list[dict] = []
    if "torch_geometric" in corpora:
        target = ensure_pyg()
        pyg = [r for r in emitted if r["source"] == "torch_geometric"]
        if target is not None and pyg:
            print(f"equivalence of {len(pyg)} torch-geometric blocks ...", flush=True)
            # only closed blocks: an open one may import the original package, which this
            # subprocess can see, and would compare the original with itself
            skipped = [
                {"id": r["id"], "status": "not-closed (skipped)", "message": r["findings"][0]}
                for r in pyg
                if r["findings"]
            ]
            pyg = [r for r in pyg if not r["findings"]]
            jobs = [
                {
                    "id": r["id"],
                    "file": r["file"],
                    "module": r["id"].split(":")[1],
                    "cls": r["id"].split(":")[2],
                    "source_packages": r["source_packages"],
                }
                for r in pyg
            ]
            worker = (
                EQUIVALENCE_WORKER.replace("sys.argv[4]", repr(str(target)))
                .replace("BENCHMARKS", repr(str(HERE)))
                .replace("REPOSITORY", repr(str(HERE.parent)))
            )
            equivalence = run_workers_equivalence(worker, jobs) + skipped
    return equivalence


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--limit", type=int, help="at most N blocks per corpus")
    parser.add_argument("--no-import", action="store_true")
    parser.add_argument("--no-equivalence", action="store_true")
    parser.add_argument("--emit-run", nargs=2, metavar=("CACHE", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--first-run", nargs=2, metavar=("CACHE", "ID"), help=argparse.SUPPRESS)
    parser.add_argument("--work", help="keep working files here (default: a temp folder)")
    parser.add_argument(
        "--results-name", default="extract_bench", help="write results/<name>.{json,md}"
    )
    args = parser.parse_args(argv)
    corpora = [c for c in args.corpora.split(",") if c]

    if args.emit_run:
        cache, out = map(Path, args.emit_run)
        result = emit_run(corpora, cache, out, args.limit)
        (out / "run.json").write_text(json.dumps(result), encoding="utf-8")
        return 0

    if args.first_run:
        cache, block_id = Path(args.first_run[0]), args.first_run[1]
        print(json.dumps(first_run(corpora, cache, block_id)))
        return 0

    work = Path(args.work or tempfile.mkdtemp(prefix="nnrag-extract-bench-"))
    load_before = os.getloadavg()
    runs = emission_runs(work, corpora, args.limit)
    first = first_extractions(work, corpora)
    load_after_emit = os.getloadavg()

    imports: list[dict] = []
    emitted = [r for r in runs[0]["rows"] if r.get("emitted")]
    if not args.no_import:
        print(f"import check of {len(emitted)} files ...", flush=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        jobs = [
            {"id": r["id"], "file": r["file"], "source_packages": r["source_packages"]}
            for r in emitted
        ]
        imports = run_workers(IMPORT_WORKER, jobs, env)

    equivalence = [] if args.no_equivalence else equivalence_runs(emitted, corpora)

    summary = summarize(runs, imports, equivalence, corpora)
    summary["first_extraction"] = first
    summary["imports_run"] = not args.no_import
    summary["load_average"] = {
        "start": [round(x, 2) for x in load_before],
        "after_emission": [round(x, 2) for x in load_after_emit],
        "end": [round(x, 2) for x in os.getloadavg()],
    }
    command = "nice python benchmarks/extract_bench.py " + " ".join(argv or sys.argv[1:])
    RESULTS.mkdir(exist_ok=True)
    detail = {
        "summary": summary,
        "import_failures": [r for r in imports if not r.get("ok")],
        "equivalence": equivalence,
        "command": command,
    }
    name = args.results_name
    (RESULTS / f"{name}.json").write_text(json.dumps(detail, indent=2, sort_keys=True) + "\n")
    (RESULTS / f"{name}.md").write_text(write_markdown(summary, command.strip()))
    print(json.dumps(summary, indent=2)[:6000])
    return 0


def run_workers_equivalence(worker: str, jobs: list[dict[str, object]]) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    results = run_workers(worker, jobs, env)
    for row in results:
        row.setdefault("status", "crash" if row.get("category") == "crash" else "harness-error")
    return results


if __name__ == "__main__":
    sys.exit(main())
