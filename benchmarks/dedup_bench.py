"""De-duplication on timm, torchvision and torch-geometric: time and uniqueness per level.

Indexes the three unpacked corpora in memory, discovers every block, resolves each block's
closure, then de-duplicates (exact, lexical, structural at Jaccard 0.90) the target classes
and the whole closures, all blocks together and per source.

    python benchmarks/dedup_bench.py

Writes ``benchmarks/results/dedup_bench.{json,md}``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from nnrag.index.discover import discover_blocks
from nnrag.retrieve.dedup import (
    LEVELS,
    DedupParams,
    DedupReport,
    DedupResult,
    FeatureCache,
    class_code,
    dedup,
    dedup_json,
    dedup_summary,
    resolved_closure_code,
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from search_bench import SOURCES, load  # noqa: E402


def figures(result: DedupResult) -> dict[str, object]:
    counted = result.total - len(result.skipped)
    return {
        "blocks": counted,
        "seconds": round(result.seconds, 2),
        **{
            level.level: {
                "unique": level.unique,
                "unique_percent": round(100 * level.unique / counted, 1) if counted else 0.0,
                "clusters": len(level.clusters),
                "largest": list(level.clusters[0].members[:6]) if level.clusters else [],
            }
            for level in result.levels
        },
    }


def main() -> None:
    params = DedupParams()
    index, index_s = load()
    started = time.perf_counter()
    blocks = discover_blocks(index)
    discover_s = time.perf_counter() - started

    started = time.perf_counter()
    targets = {block.id: code for block in blocks if (code := class_code(index, block))}
    target_text_s = time.perf_counter() - started

    started = time.perf_counter()
    closure_code = resolved_closure_code(index)
    closures = {block.id: parts for block in blocks if (parts := closure_code(block))}
    resolve_s = time.perf_counter() - started

    cache = FeatureCache(params)  # shared: each distinct definition is analysed once
    cpu = time.process_time()
    report = DedupReport(
        target=dedup(targets, scope="class", params=params, cache=cache),
        closure=dedup(closures, scope="closure", params=params, cache=cache),
    )
    dedup_cpu_s = time.process_time() - cpu
    assert report.closure is not None
    dedup_s = report.target.seconds + report.closure.seconds

    per_source: dict[str, dict[str, object]] = {}
    for source in SOURCES:
        prefix = source + ":"
        per_source[source] = {
            "class": figures(
                dedup(
                    {k: v for k, v in targets.items() if k.startswith(prefix)},
                    params=params,
                    cache=cache,
                )
            ),
            "closure": figures(
                dedup(
                    {k: v for k, v in closures.items() if k.startswith(prefix)},
                    scope="closure",
                    params=params,
                    cache=cache,
                )
            ),
        }

    result = {
        "machine": platform.platform(),
        "load_average_1m_at_end": round(os.getloadavg()[0], 1),
        "python": platform.python_version(),
        "params": dedup_summary(report)["params"],
        "blocks": len(blocks),
        "closures_resolved": len(closures),
        "index_s": round(index_s, 2),
        "discover_s": round(discover_s, 2),
        "class_text_s": round(target_text_s, 2),
        "resolve_all_s": round(resolve_s, 2),
        "dedup_all_s": round(dedup_s, 2),
        "dedup_all_cpu_s": round(dedup_cpu_s, 2),
        "target_s": 30.0,
        "all": {"class": figures(report.target), "closure": figures(report.closure)},
        "per_source": per_source,
        "clusters": dedup_json(report),
    }
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "dedup_bench.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    write_markdown(
        out,
        result,
        per_source,
        params,
        report,
        blocks=len(blocks),
        closures=len(closures),
        seconds=(dedup_s, dedup_cpu_s, resolve_s, index_s),
    )


def write_markdown(
    out: Path,
    result: dict[str, Any],
    per_source: dict[str, dict[str, object]],
    params: DedupParams,
    report: DedupReport,
    *,
    blocks: int,
    closures: int,
    seconds: tuple[float, float, float, float],
) -> None:
    """``results/dedup_bench.md`` from what :func:`main` measured."""
    dedup_s, dedup_cpu_s, resolve_s, index_s = seconds
    assert report.closure is not None

    def rows(name: str, data: dict[str, object]) -> list[str]:
        lines = []
        for scope in ("class", "closure"):
            fig = data[scope]
            assert isinstance(fig, dict)
            cells = " | ".join(
                f"{fig[level]['unique']} ({fig[level]['unique_percent']}%)" for level in LEVELS
            )
            lines.append(f"| {name} | {scope} | {fig['blocks']} | {cells} | {fig['seconds']} |")
        return lines

    lines = [
        "# de-duplication benchmark",
        "",
        "`nice python benchmarks/dedup_bench.py` (2 shared cores): timm 1.0.31,",
        "torchvision 0.29.1, torch-geometric 2.8.1 (unpacked sources, indexed in memory).",
        "Thresholds: Jaccard 0.90",
        f"(lexical and structural); MinHash num_perm={params.num_perm}, seed={params.seed},",
        f"shingles of {params.shingle} tokens, AST subtrees of >= {params.min_subtree} nodes.",
        "Levels are cumulative: 'structural' counts blocks left after merging exact, lexical",
        "and structural duplicates. 'class' = the target class statement alone; 'closure' = the",
        "resolved closure (imports + every inlined definition, original text), whose features",
        "are the union of its parts' features (each distinct definition analysed once).",
        "",
        f"- blocks: {blocks}; closures resolved: {closures}",
        f"- de-duplication time, all blocks, both scopes: **{dedup_s:.1f} s** (target <= 30 s;",
        f"  1-minute load average {result['load_average_1m_at_end']} on 2 cores at the end)",
        f"  (class {report.target.seconds:.1f} s, closure {report.closure.seconds:.1f} s);",
        f"  CPU time of this process for both: {dedup_cpu_s:.1f} s",
        f"- resolving every closure first: {resolve_s:.1f} s; in-memory index: {index_s:.1f} s",
        "",
        "| blocks | scope | n | unique after exact | after lexical | after structural | s |",
        "|---|---|---|---|---|---|---|",
        *rows("all three", result["all"]),
        *(line for name, data in per_source.items() for line in rows(name, data)),
        "",
        "Per-source rows reuse the features computed for the 'all three' rows (their time",
        "is clustering only).",
        "",
        "For scale: the NN-RAG paper reports 80% of its validated blocks structurally unique",
        "at 0.90 (over all its candidates, not per level of the same definition).",
        "",
    ]
    (out / "dedup_bench.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
