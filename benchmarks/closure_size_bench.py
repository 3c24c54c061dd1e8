"""Closure-size benchmark: block-file lines, source files, extraction time, registry coverage.

Indexes whole released packages (wide resolution: every module of every source is
reachable) of OpenMMLab (mmengine 0.10.7, mmcv-lite 2.2.0, mmdet 3.3.0, mmsegmentation
1.2.2) and transformers 4.57.6 from local unpacked wheels under /work/corpora/<dist>/unpacked
(``pip download --no-deps NAME==VER`` and unzip), then extracts blocks (extraction only, no
sandbox) and records per block: lines of the emitted file, source files it inlines,
extraction seconds, and whether every registry type string its closure reaches was carried
or a ``dynamic-registry`` problem was reported.

    nice python benchmarks/closure_size_bench.py --label after            # all blocks
    nice python benchmarks/closure_size_bench.py --label before --limit 150 --timeout 120

Results: benchmarks/results/closure_size_bench.json (one entry per label) and .md
(``--out NAME`` for another name; ``--cache DIR`` keeps and reuses the index there).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CORPORA = {
    "mmengine": ("/work/corpora/mmengine/unpacked", "mmengine", "mmengine==0.10.7"),
    "mmcv": ("/work/corpora/mmcv-lite/unpacked", "mmcv", "mmcv-lite==2.2.0"),
    "mmdet": ("/work/corpora/mmdet/unpacked", "mmdet", "mmdet==3.3.0"),
    "mmseg": ("/work/corpora/mmsegmentation/unpacked", "mmseg", "mmsegmentation==1.2.2"),
    "transformers": ("/work/corpora/transformers/unpacked", "transformers", "transformers==4.57.6"),
}
MEASURED = ("mmdet", "mmseg", "transformers")
"""Sources whose blocks are extracted (mmengine and mmcv are indexed for resolution)."""


NOTE = (
    "Lines and source-file statistics cover the blocks extracted within the per-block timeout;"
    " a block that timed out (the largest closures) is counted under `timeouts` only, so a"
    " run with timeouts understates sizes. `registry` rows: a block reaches registry type"
    " strings when it carries a registration or reports a type string registered nowhere;"
    " `every type string carried` has no such report."
)


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _Timeout


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    position = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[position]


def run(limit: int | None, timeout: float, cache: Path) -> dict[str, object]:
    from nnrag.config import load_settings
    from nnrag.errors import NnragError
    from nnrag.extract.block import extract
    from nnrag.report import format_diagnostic
    from nnrag.workspace import Workspace

    sources = [
        {"name": name, "path": root, "paths": [package]}
        for name, (root, package, _) in CORPORA.items()
    ]
    repos = cache / "repos.json"
    cache.mkdir(parents=True, exist_ok=True)
    repos.write_text(json.dumps({"sources": sources}), encoding="utf-8")
    workspace = Workspace(load_settings(repos, cache_dir=cache, environ={}))
    started = time.perf_counter()
    workspace.build()
    index = workspace.index()
    blocks = [b for b in workspace.blocks() if b.source in MEASURED]
    index_s = time.perf_counter() - started
    if limit is not None:  # an even sample of each source (sorted ids cluster by package)
        chosen = []
        for name in MEASURED:
            mine = [b for b in blocks if b.source == name]
            step = max(1, len(mine) // limit)
            chosen += mine[::step][:limit]
        blocks = chosen
    signal.signal(signal.SIGALRM, _alarm)
    rows: list[dict[str, object]] = []
    for number, block in enumerate(blocks):
        row: dict[str, object] = {"id": block.id, "source": block.source}
        began = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            extracted = extract(index, block)
        except _Timeout:
            row.update(seconds=time.perf_counter() - began, timeout=True)
            rows.append(row)
            continue
        except NnragError as error:
            row.update(seconds=time.perf_counter() - began, error=str(error)[:300])
            rows.append(row)
            continue
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        registry = [p for p in extracted.problems if p.category == "dynamic-registry"]
        carried = getattr(extracted, "registrations", None)  # None: before this field existed
        unregistered = [p for p in registry if "registered nowhere" in p.message]
        row.update(
            seconds=time.perf_counter() - began,
            lines=extracted.code.count("\n"),
            files=len(extracted.files),
            categories=sorted({p.category for p in extracted.problems}),
            dynamic_registry=[format_diagnostic(p)[:300] for p in registry],
            registrations=len(carried) if carried is not None else None,
            unregistered_types=len(unregistered),
        )
        rows.append(row)
        if number % 100 == 0:
            print(f"{number}/{len(blocks)} {block.id} {row['seconds']:.2f}s", file=sys.stderr)
    return {"index_s": index_s, "blocks": len(blocks), "rows": rows}


def summarize(rows: list[dict[str, object]]) -> dict[str, object]:
    done = [r for r in rows if "lines" in r]
    lines = [float(r["lines"]) for r in done]  # type: ignore[arg-type]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
    files = [float(r["files"]) for r in done]  # type: ignore[arg-type]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
    seconds = [float(r["seconds"]) for r in rows]  # type: ignore[arg-type]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
    with_keys = [r for r in done if r.get("registrations") or r.get("unregistered_types")]
    return {
        "blocks": len(rows),
        "extracted": len(done),
        "timeouts": sum(1 for r in rows if r.get("timeout")),
        "errors": sum(1 for r in rows if "error" in r),
        "lines_median": statistics.median(lines) if lines else 0,
        "lines_p99": percentile(lines, 99),
        "lines_max": max(lines, default=0),
        "over_20000_lines": sum(1 for v in lines if v > 20_000),
        "files_median": statistics.median(files) if files else 0,
        "files_p99": percentile(files, 99),
        "files_max": max(files, default=0),
        "seconds_median": statistics.median(seconds) if seconds else 0,
        "seconds_p95": percentile(seconds, 95),
        "seconds_max": max(seconds, default=0),
        "dynamic_registry": sum(1 for r in done if r["dynamic_registry"]),
        "registry_all_carried": sum(1 for r in with_keys if not r["unregistered_types"]),
        "registry_blocks": len(with_keys),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="name of this measurement (before/after)")
    parser.add_argument("--limit", type=int, default=None, help="blocks per source (sample)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per block")
    parser.add_argument(
        "--out", default="closure_size_bench", help="results name under benchmarks/results/"
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="keep the index in this directory (reused)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nnrag-closure-bench-") as temp:
        load_before = os.getloadavg()
        result = run(args.limit, args.timeout, args.cache or Path(temp) / "cache")
        load_after = os.getloadavg()
    rows: list[dict[str, object]] = result["rows"]  # type: ignore[assignment]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
    per_source = {name: summarize([r for r in rows if r["source"] == name]) for name in MEASURED}
    entry = {
        "label": args.label,
        "limit": args.limit,
        "timeout_s": args.timeout,
        "index_s": result["index_s"],
        "overall": summarize(rows),
        "per_source": per_source,
        "largest": sorted(
            (
                {
                    "id": r["id"],
                    "lines": r.get("lines"),
                    "files": r.get("files"),
                    "seconds": r["seconds"],
                    "timeout": r.get("timeout", False),
                }
                for r in rows
            ),
            key=lambda r: -(r["lines"] or 10**9 if r["timeout"] else r["lines"] or 0),
        )[:15],
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_before": load_before,
            "load_after": load_after,
            "note": "shared machine (8 helpers on 2 cores); timings are indicative",
        },
        "rows": rows,
    }
    save_labelled(args.out, args.label, entry, write_markdown)


def save_labelled(
    name: str,
    label: str,
    entry: dict[str, object],
    write_markdown: Callable[[dict[str, dict[str, object]], Path], None],
) -> None:
    """Store ``entry`` under ``label`` in results/<name>.json (other labels kept), rewrite
    results/<name>.md from all of them, and print the entry's overall figures."""
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{name}.json"
    data = json.loads(out.read_text("utf-8")) if out.is_file() else {}
    data[label] = entry
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    write_markdown(data, RESULTS / f"{name}.md")
    print(json.dumps(entry["overall"], indent=1))


def write_markdown(data: dict[str, dict[str, object]], path: Path) -> None:
    keys = (
        ("blocks", "blocks"),
        ("timeouts", "timeouts"),
        ("lines_median", "lines median"),
        ("lines_p99", "lines p99"),
        ("lines_max", "lines max"),
        ("over_20000_lines", "files > 20k lines"),
        ("files_median", "source files median"),
        ("files_p99", "source files p99"),
        ("files_max", "source files max"),
        ("seconds_median", "extract s median"),
        ("seconds_p95", "extract s p95"),
        ("seconds_max", "extract s max"),
        ("registry_blocks", "blocks whose closure reaches registry type strings"),
        ("registry_all_carried", "... every type string carried"),
        ("dynamic_registry", "blocks with any dynamic-registry problem"),
    )
    out = ["# Closure size benchmark", "", __doc__.split("\n\n")[1], "", NOTE, ""]
    for label, entry in data.items():
        machine = entry["machine"]
        out += [
            f"## {label}",
            "",
            f"sample: {entry['limit'] or 'all'} blocks per source; per-block timeout "
            f"{entry['timeout_s']} s; index {entry['index_s']:.1f} s; load "
            f"{machine['load_before']} -> {machine['load_after']} (shared machine)",  # type: ignore[index]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
            "",
            "| metric | overall | " + " | ".join(MEASURED) + " |",
            "|---|---|" + "---|" * len(MEASURED),
        ]
        per = entry["per_source"]
        for key, title in keys:
            cells = [entry["overall"][key]] + [per[s][key] for s in MEASURED]  # type: ignore[index]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
            out.append(
                f"| {title} | "
                + " | ".join(
                    f"{c:.3f}" if isinstance(c, float) and c < 10 else str(c) for c in cells
                )
                + " |"
            )
        out += ["", "largest:", ""]
        for row in entry["largest"][:10]:  # type: ignore[index]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
            out.append(
                f"- {row['id']}: {row['lines']} lines, {row['files']} files, "
                f"{row['seconds']:.2f} s{' (timeout)' if row['timeout'] else ''}"
            )
        out.append("")
    path.write_text("\n".join(out), encoding="utf-8")


if __name__ == "__main__":
    main()
