"""Validate every block of the local corpora to ``forward``, then replay every passing recipe.

Run: nice python benchmarks/validate_bench.py [--corpus timm] [--limit N] [--workers 2] [--together]
Writes benchmarks/results/validate_bench.json and .md.

Corpora: timm, torchvision, torch-geometric (each indexed alone, or ``--together``), and the
configured ones (:data:`CONFIGS`): ``transformers`` (the NN-RAG paper's model paths),
``openmmlab`` (mmdet, mmseg, mmpose, mmpretrain with mmengine and mmcv-lite beside them) and
``ultralytics``; run those with the benchmark environment, where their runtime dependencies
are installed (``/work/benchenv/bin/python``).

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
from nnrag.model import STAGES, BlockRef, Category, Stage, ValidationResult, stage_index
from nnrag.recipes import recipe_to_dict
from nnrag.report import format_diagnostic
from nnrag.validate.replay import differences
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import run_validation
from nnrag.workspace import Workspace

CORPORA = {
    "timm": Path("/work/corpora/timm/unpacked"),
    "torchvision": Path("/work/corpora/torchvision/unpacked"),
    "torch_geometric": Path("/work/corpora/torch-geometric/unpacked"),
}
"""Each corpus's unpacked wheel (timm 1.0.31, torchvision 0.29.1, torch-geometric 2.8.1); the
key is its package."""
TARGETS = {
    "timm": (90, 92),
    "torchvision": (85, 85),
    "torch_geometric": (75, 70),
    "transformers": (80, 70),
    "openmmlab": (70, 60),
    "ultralytics": (80, 75),
}
"""(instantiate, forward) targets in percent (forward: issue 13)."""
RESULTS = Path(__file__).parent / "results"
_UNPACKED = Path("/work/corpora")
_HF_MODELS = ("bert", "opt", "clip", "vit", "swin")
_MM = ("mmdet", "mmsegmentation:mmseg", "mmpose", "mmpretrain")


def _mm_source(folder: str) -> dict[str, Any]:
    folder, _, package = folder.partition(":")
    package = package or folder.replace("-lite", "")
    return {"name": package, "path": str(_UNPACKED / folder / "unpacked"), "paths": [package]}


CONFIGS: dict[str, dict[str, Any]] = {
    # the NN-RAG paper's transformers paths (indexing the shared top-level modules beside them,
    # modeling_utils and generation, made extracting one block take over 18 minutes here)
    "transformers": {
        "sources": [
            {
                "name": "transformers",
                "path": str(_UNPACKED / "transformers" / "unpacked"),
                "paths": [f"transformers/models/{m}" for m in _HF_MODELS],
                "include": [f"transformers.models.{m}.*" for m in _HF_MODELS],
            }
        ],
        "measured": ["transformers"],
    },
    # four OpenMMLab sources with mmengine and mmcv-lite indexed beside them
    "openmmlab": {
        "sources": [
            _mm_source("mmengine"),
            _mm_source("mmcv-lite"),
            *(_mm_source(folder) for folder in _MM),
        ],
        "measured": ["mmdet", "mmseg", "mmpose", "mmpretrain"],
    },
    "ultralytics": {
        "sources": [
            {
                "name": "ultralytics",
                "path": str(_UNPACKED / "ultralytics" / "unpacked"),
                "paths": ["ultralytics/nn", "ultralytics/utils", "ultralytics/models"],
            }
        ],
        "measured": ["ultralytics"],
    },
}
"""Corpora configured as a repos.json (several sources indexed together)."""


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
            {"name": name, "path": str(root), "paths": [name]}
            for name, root in sorted(CORPORA.items())
        ]
    }
    return configured_index(config, "together")[0]


def configured_index(config: dict[str, Any], label: str) -> tuple[Index, Workspace]:
    """Index a repos.json configuration in a cache kept between runs (in the temp folder:
    the index is reused where sources and nnrag's analysis code are unchanged)."""
    folder = Path(tempfile.gettempdir()) / f"nnrag-bench-{label}"
    folder.mkdir(exist_ok=True)
    repos = folder / "repos.json"
    repos.write_text(json.dumps({"sources": config["sources"]}))
    settings = load_settings(repos, cache_dir=folder / "cache")
    build_index(settings)
    return load_index(settings), Workspace(settings)


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
    blocks = [b for b in discover_blocks(index) if b.module.split(".")[0] == name][:limit]
    report = run_blocks(
        name,
        index,
        blocks,
        indexed=time.perf_counter() - started,
        workers=workers,
        depth=depth,
        timeout_s=timeout_s,
    )
    return {**report, "indexed": "together" if shared is not None else "alone"}


def run_config(
    name: str,
    *,
    limit: int | None,
    workers: int,
    depth: Stage,
    timeout_s: float,
    skip: int = 0,
) -> dict[str, Any]:
    """A configured corpus (several sources in one repos.json); rates over ``measured``."""
    config = CONFIGS[name]
    started = time.perf_counter()
    index, workspace = configured_index(config, name)
    measured = set(config["measured"])
    blocks = [b for b in workspace.blocks() if b.source in measured]
    if limit is not None:  # the same share of every measured source (after ``skip`` each)
        per = max(1, limit // len(measured))
        blocks = [
            b
            for s in sorted(measured)
            for b in [x for x in blocks if x.source == s][skip : skip + per]
        ]
    report = run_blocks(
        name,
        index,
        blocks,
        indexed=time.perf_counter() - started,
        workers=workers,
        depth=depth,
        timeout_s=timeout_s,
    )
    return {**report, "indexed": "configured", "sources": config["sources"], "skip": skip}


class _Pass:
    """The sandboxes (one per worker thread) and the harvest of one benchmark run."""

    def __init__(
        self, index: Index, files: dict[str, _File], *, depth: Stage, timeout_s: float
    ) -> None:
        self.index, self.files, self.depth, self.timeout_s = index, files, depth, timeout_s
        self.local = threading.local()
        self.boxes: list[Sandbox] = []
        self.harvest: dict[str, set[str]] = {}
        self.lock = threading.Lock()
        self.frozen: dict[str, list[dict[str, Any]]] = {}
        self.results: dict[str, ValidationResult] = {}

    def box(self) -> Sandbox:
        found = getattr(self.local, "box", None)
        if found is None:
            found = self.local.box = Sandbox()
            with self.lock:
                self.boxes.append(found)
        return found

    def validate(self, block_id: str) -> ValidationResult:
        block, path, problem, category = self.files[block_id]
        if path is None or problem:
            return ValidationResult(
                block_id=block_id,
                depth=self.depth,
                stage_reached="compile",
                failed_stage="closed",
                category=category if path is not None and category else "internal-error",
                message=problem,
            )
        # As in the product: a first pass harvests and uses nothing harvested; the second
        # uses the complete, frozen harvest. Outcomes do not depend on the order blocks ran.
        records = self.frozen.get(f"{block.source}:{block.name}", [])
        result, found = self._run(block, path, block_id, harvested=records, harvest=not self.frozen)
        with self.lock:
            for record in found:
                key = f"{block.source}:{record['class']}"
                self.harvest.setdefault(key, set()).add(json.dumps(record, sort_keys=True))
        return result

    def replay(self, block_id: str) -> tuple[str, tuple[str, ...]]:
        block, path, _, _ = self.files[block_id]
        recorded = self.results[block_id]
        assert path is not None
        assert recorded.recipe is not None
        again, _ = self._run(
            block, path, block_id, harvest=False, replay=recipe_to_dict(recorded.recipe)
        )
        return block_id, differences(recorded, again)

    def _run(
        self, block: Any, path: Path, block_id: str, **options: Any
    ) -> tuple[ValidationResult, list[dict[str, Any]]]:
        """One block in this pass's sandbox, at its depth and timeout."""
        return run_validation(
            path,
            block_id=block_id,
            class_name=block.name,
            depth=self.depth,
            timeout_s=self.timeout_s,
            source_packages=self.index.source_packages(block.source),
            sandbox=self.box(),
            **options,
        )

    def close(self) -> None:
        for sandbox in self.boxes:
            sandbox.close()


_File = tuple[BlockRef, Path | None, str, Category | None]
"""A block, its file (None: extraction failed), its first blocking problem, its category."""


def extract_blocks(index: Index, blocks: list[BlockRef], out: Path) -> dict[str, _File]:
    files: dict[str, _File] = {}
    for block in blocks:
        try:
            extracted = extract(index, block)
        except Exception as error:
            files[block.id] = (block, None, f"internal-error: {error!r}"[:300], None)
            continue
        path = write_block(extracted, out, filename=f"{block.module}.{block.name}.py")
        # As in the product (validate.stages): only blocking problems stop a block at `closed`.
        blocking = extracted.blocking_problems
        problem = format_diagnostic(blocking[0]) if blocking else ""
        files[block.id] = (block, path, problem, blocking[0].category if blocking else None)
    return files


def run_blocks(
    name: str,
    index: Index,
    blocks: list[BlockRef],
    *,
    indexed: float,
    workers: int,
    depth: Stage,
    timeout_s: float,
) -> dict[str, Any]:
    """Extract and validate ``blocks``; harvest in a first pass, then replay every pass."""
    out = Path(tempfile.mkdtemp(prefix=f"nnrag-bench-{name}-"))
    started = time.perf_counter()
    files = extract_blocks(index, blocks, out)
    extract_s = time.perf_counter() - started
    run = _Pass(index, files, depth=depth, timeout_s=timeout_s)
    started = time.perf_counter()
    results = run.results
    with ThreadPoolExecutor(workers) as pool:
        for result in pool.map(run.validate, list(files)):
            results[result.block_id] = result
        first_pass = time.perf_counter() - started
        run.frozen.update(
            {k: [json.loads(r) for r in sorted(v)[:3]] for k, v in run.harvest.items()} or {"": []}
        )
        retry = [
            i
            for i, r in results.items()
            if not r.passed
            and f"{files[i][0].source}:{files[i][0].name}" in run.frozen
            and r.failed_stage != "closed"
        ]
        for result in pool.map(run.validate, retry):
            before = results[result.block_id]
            if result.passed or progress(result) > progress(before):
                results[result.block_id] = result
        validate_s = time.perf_counter() - started
        started = time.perf_counter()
        passing = [i for i, r in results.items() if r.passed and r.recipe is not None]
        replays = dict(pool.map(run.replay, passing))
        replay_s = time.perf_counter() - started
    run.close()
    return summarize(
        name,
        results,
        files,
        replays,
        seconds={
            "index": round(indexed, 1),
            "extract": round(extract_s, 1),
            "validate_first_pass": round(first_pass, 1),
            "validate_total": round(validate_s, 1),
            "replay": round(replay_s, 1),
        },
        extra={"harvest_retries": len(retry), "workers": workers, "depth": depth},
        timeout_s=timeout_s,
    )


def summarize(
    name: str,
    results: dict[str, ValidationResult],
    files: dict[str, _File],
    replays: dict[str, tuple[str, ...]],
    *,
    seconds: dict[str, float],
    extra: dict[str, Any],
    timeout_s: float,
) -> dict[str, Any]:
    total = len(results)
    counts = {s: sum(reached(r, s) for r in results.values()) for s in STAGES}
    failures: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for r in results.values():
        if not r.passed and r.category:
            key = f"{r.failed_stage}/{r.category}"
            failures[key] += 1
            examples.setdefault(key, f"{r.block_id}: {r.message[:160]}")
    per_source: dict[str, dict[str, Any]] = {}
    for block_id, r in results.items():
        row = per_source.setdefault(files[block_id][0].source, {"blocks": 0, "forward": 0})
        row["blocks"] += 1
        row["forward"] += reached(r, "forward")
    for row in per_source.values():
        row["forward_rate"] = round(100 * row["forward"] / max(row["blocks"], 1), 1)
    reproduced = sum(not d for d in replays.values())
    lossless = sum(
        1 for r in results.values() if r.passed and r.recipe is not None and r.recipe.lossless
    )
    return {
        "corpus": name,
        "blocks": total,
        "reached": counts,
        "rates": {s: round(100 * counts[s] / max(total, 1), 1) for s in STAGES},
        "targets": {"instantiate": TARGETS[name][0], "forward": TARGETS[name][1]},
        "per_source": per_source,
        "replay": {
            "passing": len(replays),
            "reproduced": reproduced,
            "rate": round(100 * reproduced / max(len(replays), 1), 1),
            "lossless_recipes": lossless,
            "differing": {k: list(v) for k, v in sorted(replays.items()) if v},
        },
        "failures": dict(failures.most_common()),
        "examples": examples,
        "seconds": seconds,
        **extra,
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
    lines += ["", "| corpus | source | blocks | forward | replay reproduced (passing) |"]
    lines.append("|---|---|---|---|---|")
    for r in reports:
        replay = r.get("replay", {})
        for source, row in sorted(r.get("per_source", {}).items()):
            lines.append(
                f"| {r['corpus']} | {source} | {row['blocks']} | {row['forward_rate']}% | "
                f"{replay.get('rate', '-')}% ({replay.get('passing', '-')}) |"
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
    parser.add_argument("--corpus", choices=sorted({*CORPORA, *CONFIGS}), action="append")
    parser.add_argument("--limit", type=int)
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="configured corpora: skip the first N blocks of each measured source (a held-out "
        "sample beside --limit's first blocks)",
    )
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
        options = {
            "limit": args.limit,
            "workers": args.workers,
            "depth": args.depth,
            "timeout_s": args.timeout,
        }
        if name in CONFIGS:
            report = run_config(name, skip=args.skip, **options)
        else:
            report = run_corpus(name, CORPORA[name], shared=shared, **options)
        print(
            json.dumps(
                {k: v for k, v in report.items() if k not in {"results", "examples", "sources"}}
            ),
            flush=True,
        )
        reports.append(report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(reports, indent=1) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(reports))
    print(markdown(reports))


if __name__ == "__main__":
    main()
