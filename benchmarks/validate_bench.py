"""Validate every block of the local corpora (timm, torchvision, torch-geometric) to ``forward``.

Run: nice python benchmarks/validate_bench.py [--corpus timm] [--limit N] [--workers 2] [--together]
Writes benchmarks/results/validate_bench.json and .md.

By default each corpus is indexed alone, so a timm block that imports torchvision fails at
``import`` (torchvision cannot be installed here). ``--together`` indexes the three corpora as
one configuration, as ``examples/repos.json`` does: such a block then gets torchvision's
definitions inlined from its indexed source. Rates are always over the corpus's own blocks.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from nnrag.config import load_settings
from nnrag.extract.block import extract, write_block
from nnrag.index.build import Index, build_index, index_tree, load_index
from nnrag.index.discover import discover_blocks
from nnrag.model import STAGES, BlockRef, Stage, ValidationResult, stage_index
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import run_validation

CORPORA = {
    "timm": Path("/work/corpora/src/timm-1.0.31"),
    "torchvision": Path("/work/corpora/src/torchvision-0.29.1"),
    "torch_geometric": Path("/work/corpora/src/torch_geometric-2.8.1"),
}
TARGETS = {"timm": (90, 85), "torchvision": (85, 75), "torch_geometric": (75, 50)}
RESULTS = Path(__file__).parent / "results"


def reached(result: ValidationResult, stage: Stage) -> bool:
    return result.stage_reached is not None and stage_index(result.stage_reached) >= stage_index(
        stage
    )


def progress(result: ValidationResult) -> int:
    return -1 if result.stage_reached is None else stage_index(result.stage_reached)


def combined_index() -> Index:
    """One index over the three corpora (a temporary cache), as a repos.json with all three."""
    config = {
        "sources": [
            {"name": name, "path": str(root), "paths": [root.name.rsplit("-", 1)[0]]}
            for name, root in sorted(CORPORA.items())
        ]
    }
    folder = Path(tempfile.mkdtemp(prefix="nnrag-bench-together-"))
    repos = folder / "repos.json"
    repos.write_text(json.dumps(config))
    settings = load_settings(repos, cache_dir=folder / "cache")
    build_index(settings)
    return load_index(settings)


def run_corpus(
    name: str,
    root: Path,
    *,
    limit: int | None,
    workers: int,
    depth: Stage,
    timeout_s: float,
    shared: Index | None = None,
) -> dict[str, Any]:
    started = time.perf_counter()
    index = shared if shared is not None else index_tree(root, source=name)
    package = root.name.rsplit("-", 1)[0]
    blocks = [b for b in discover_blocks(index) if b.module.split(".")[0] == package][:limit]
    packages = index.source_packages(name)
    indexed = time.perf_counter() - started
    out = Path(tempfile.mkdtemp(prefix=f"nnrag-bench-{name}-"))
    files: dict[str, tuple[BlockRef, Path | None, str]] = {}
    started = time.perf_counter()
    for block in blocks:
        try:
            extracted = extract(index, block)
        except Exception as error:
            files[block.id] = (block, None, f"internal-error: {error!r}"[:300])
            continue
        path = write_block(extracted, out, filename=f"{block.module}.{block.name}.py")
        # As in the product (validate.stages): only blocking problems stop a block at `closed`.
        blocking = extracted.blocking_problems
        problem = str(blocking[0]) if blocking else ""
        files[block.id] = (block, path, problem)
    extract_s = time.perf_counter() - started

    local = threading.local()
    boxes: list[Sandbox] = []
    harvest: dict[str, list[dict[str, Any]]] = {}
    lock = threading.Lock()

    def validate(block_id: str) -> ValidationResult:
        block, path, problem = files[block_id]
        if path is None or problem:
            category = "internal-error" if path is None else problem.split("]")[0].split("[")[-1]
            return ValidationResult(
                block_id=block_id,
                depth=depth,
                stage_reached="compile",
                failed_stage="closed",
                category=category if path is not None else "internal-error",  # type: ignore[arg-type]
                message=problem,
            )
        box = getattr(local, "box", None)
        if box is None:
            box = local.box = Sandbox()
            with lock:
                boxes.append(box)
        with lock:
            records = list(harvest.get(block.name, []))[:3]
        result, found = run_validation(
            path,
            block_id=block_id,
            class_name=block.name,
            depth=depth,
            timeout_s=timeout_s,
            source_packages=packages,
            sandbox=box,
            harvested=records,
        )
        with lock:
            for record in found:
                harvest.setdefault(str(record["class"]), []).append(record)
        return result

    started = time.perf_counter()
    results: dict[str, ValidationResult] = {}
    with ThreadPoolExecutor(workers) as pool:
        for result in pool.map(validate, list(files)):
            results[result.block_id] = result
        first_pass = time.perf_counter() - started
        retry = [
            i
            for i, r in results.items()
            if not r.passed and files[i][0].name in harvest and r.failed_stage != "closed"
        ]
        for result in pool.map(validate, retry):
            before = results[result.block_id]
            if result.passed or progress(result) > progress(before):
                results[result.block_id] = result
    validate_s = time.perf_counter() - started
    for box in boxes:
        box.close()

    total = len(results)
    counts = {s: sum(reached(r, s) for r in results.values()) for s in STAGES}
    failures: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for r in results.values():
        if not r.passed and r.category:
            key = f"{r.failed_stage}/{r.category}"
            failures[key] += 1
            examples.setdefault(key, f"{r.block_id}: {r.message[:160]}")
    return {
        "corpus": name,
        "indexed": "together" if shared is not None else "alone",
        "blocks": total,
        "reached": counts,
        "rates": {s: round(100 * counts[s] / max(total, 1), 1) for s in STAGES},
        "targets": {"instantiate": TARGETS[name][0], "forward": TARGETS[name][1]},
        "failures": dict(failures.most_common()),
        "examples": examples,
        "seconds": {
            "index": round(indexed, 1),
            "extract": round(extract_s, 1),
            "validate_first_pass": round(first_pass, 1),
            "validate_total": round(validate_s, 1),
        },
        "harvest_retries": len(retry),
        "workers": workers,
        "depth": depth,
        "timeout_s": timeout_s,
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "results": {
            i: [
                r.stage_reached,
                r.failed_stage,
                r.category,
                round(r.duration_s, 2),
                r.message[:200],
            ]
            for i, r in sorted(results.items())
        },
    }


def markdown(reports: list[dict[str, Any]]) -> str:
    lines = [
        "# validate_bench",
        "",
        "Every discovered block extracted from the local corpora and validated in the sandbox.",
        "Command: `nice python benchmarks/validate_bench.py` (per corpus: `--corpus NAME --out",
        "validate_bench_NAME`, then `--merge`; `--together` indexes the three corpora as one",
        "configuration, as examples/repos.json does). Rates are over all discovered blocks of the",
        "package; `closed` failures come from extraction, `import/missing-external` from",
        "packages not installable here (torchvision for timm.data, ogb, transformers, pyg-lib).",
        "Environment: torch 2.13.0 CPU, pillow installed; 2 cores shared with other jobs",
        "(load average in the JSON), 30 s timeout per block, 2 sandbox workers.",
        "",
        "| corpus | indexed | blocks | closed | import | instantiate (target) | forward (target) "
        "| validate s (workers) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        rates, targets = r["rates"], r["targets"]
        lines.append(
            f"| {r['corpus']} | {r.get('indexed', 'alone')} | {r['blocks']} | "
            f"{rates['closed']}% | {rates['import']}% | "
            f"{rates['instantiate']}% ({targets['instantiate']}%) | {rates['forward']}% "
            f"({targets['forward']}%) | {r['seconds']['validate_total']} ({r['workers']}) |"
        )
    for r in reports:
        lines += ["", f"## Failures: {r['corpus']}", "", "| stage/category | count | example |"]
        lines.append("|---|---|---|")
        for key, count in r["failures"].items():
            example = r["examples"][key].replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {key} | {count} | {example} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", choices=sorted(CORPORA), action="append")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--depth", default="forward", choices=STAGES)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--out", default="validate_bench")
    parser.add_argument(
        "--together", action="store_true", help="index the three corpora as one configuration"
    )
    parser.add_argument(
        "--merge", action="store_true", help="combine results/validate_bench_*.json into one report"
    )
    args = parser.parse_args()
    if args.merge:
        merged = [
            report
            for path in sorted(RESULTS.glob("validate_bench_*.json"))
            for report in json.loads(path.read_text())
        ]
        (RESULTS / "validate_bench.md").write_text(markdown(merged))
        print(markdown(merged))
        return
    reports = []
    shared = combined_index() if args.together else None
    for name in args.corpus or sorted(CORPORA):
        report = run_corpus(
            name,
            CORPORA[name],
            limit=args.limit,
            workers=args.workers,
            depth=args.depth,
            timeout_s=args.timeout,
            shared=shared,
        )
        print(
            json.dumps({k: v for k, v in report.items() if k not in {"results", "examples"}}),
            flush=True,
        )
        reports.append(report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(reports, indent=1) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(reports))
    print(markdown(reports))


if __name__ == "__main__":
    main()
