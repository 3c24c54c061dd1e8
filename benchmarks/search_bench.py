"""Search on timm, torchvision and torch-geometric: build and update time, query latency.

Indexes the three unpacked corpora in memory (``index_tree`` per source), builds the FTS5
search table (in a throwaway cache) from every discovered block, then times 50 queries
(median over 5 rounds each, on a warm connection) and an incremental update after one
module changed.

    python benchmarks/search_bench.py [--cache DIR]

Writes ``benchmarks/results/search_bench.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from nnrag.index.build import Index, index_tree
from nnrag.index.discover import discover_blocks
from nnrag.retrieve.search import SearchIndex, search_path

HERE = Path(__file__).resolve().parent
CORPORA = Path("/work/corpora/src")
SOURCES = {
    "timm": (CORPORA / "timm-1.0.31", "timm"),
    "torchvision": (CORPORA / "torchvision-0.29.1", "torchvision"),
    "torch_geometric": (CORPORA / "torch_geometric-2.8.1", "torch_geometric"),
}
QUERIES = [
    "channel attention",
    "squeeze excitation",
    "window attention",
    "multi head self attention",
    "relative position bias",
    "rotary embedding",
    "patch embedding",
    "layer norm",
    "batch norm activation",
    "group norm",
    "depthwise separable convolution",
    "inverted residual",
    "bottleneck block",
    "conv bn act",
    "transformer block",
    "transformer encoder layer",
    "mlp",
    "gated mlp",
    "drop path",
    "stochastic depth",
    "adaptive avg pool",
    "generalized mean pooling",
    "roi align",
    "feature pyramid network",
    "classifier head",
    "detection head",
    "resnet",
    "vision transformer",
    "efficientnet",
    "mobilenet",
    "swin",
    "convnext",
    "graph convolution",
    "graph attention",
    "message passing",
    "GCNConv",
    "SAGEConv",
    "edge conv",
    "global attention pooling",
    "set transformer",
    "knowledge graph embedding",
    "graph normalization",
    "label smoothing cross entropy",
    "focal loss",
    "swish",
    "hard sigmoid",
    "gelu",
    "anti aliasing blur pool",
    "selective kernel",
    "coordinate attention",
]


def load() -> tuple[Index, float]:
    """One in-memory index of the three corpora (``index_tree`` per source, combined)."""
    started = time.perf_counter()
    parts = [index_tree(root / package, source=name) for name, (root, package) in SOURCES.items()]
    index = Index(
        checkouts={name: part.checkouts[name] for name, part in zip(SOURCES, parts, strict=True)},
        modules=[info for part in parts for info in part.modules()],
        problems=[problem for part in parts for problem in part.problems],
    )
    return index, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, help="cache folder (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nnrag-search-bench-") as temp:
        cache = args.cache or Path(temp)
        index, index_s = load()
        started = time.perf_counter()
        blocks = discover_blocks(index)
        discover_s = time.perf_counter() - started
        db = search_path(cache)
        db.unlink(missing_ok=True)
        with SearchIndex(db) as table:
            cold = table.update(index, blocks)
            noop = table.update(index, blocks)
            # One module "changes": forget its row, as a changed sha1 would.
            table._db.execute(
                "UPDATE modules SET sha1 = 'changed' WHERE module = ?", ("timm.layers.mlp",)
            )
            one = table.update(index, blocks)
            categories = Counter(table.categories().values())
            per_source_categories = {
                source: dict(
                    Counter(
                        category
                        for block_id, category in table.categories().items()
                        if block_id.startswith(source + ":")
                    ).most_common()
                )
                for source in SOURCES
            }
        latencies: list[float] = []
        tops: list[dict[str, object]] = []
        with SearchIndex(db) as table:
            table.search("warm up")
            for query in QUERIES:
                rounds = []
                for _ in range(5):
                    started = time.perf_counter()
                    hits = table.search(query)
                    rounds.append(time.perf_counter() - started)
                latencies.append(statistics.median(rounds))
                tops.append(
                    {
                        "query": query,
                        "ms": round(statistics.median(rounds) * 1000, 3),
                        "hits": len(hits),
                        "top": [f"{hit.id} [{hit.category}]" for hit in hits[:3]],
                    }
                )
        ms = sorted(latency * 1000 for latency in latencies)
        result: dict[str, Any] = {
            "machine": platform.platform(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 1),
            "python": platform.python_version(),
            "sources": {name: str(root / package) for name, (root, package) in SOURCES.items()},
            "modules": sum(1 for _ in index.modules()),
            "blocks": len(blocks),
            "index_s": round(index_s, 2),
            "discover_s": round(discover_s, 2),
            "search_table_cold_s": round(cold.seconds, 3),
            "search_table_cold_modules": cold.modules,
            "search_table_noop_s": round(noop.seconds, 4),
            "search_table_one_module_s": round(one.seconds, 4),
            "search_table_one_module_blocks": one.blocks,
            "queries": len(QUERIES),
            "query_ms_median": round(statistics.median(ms), 3),
            "query_ms_p95": round(ms[int(0.95 * (len(ms) - 1))], 3),
            "query_ms_max": round(ms[-1], 3),
            "target_ms": 20.0,
            "categories": dict(categories.most_common()),
            "categories_per_source": per_source_categories,
            "results": tops,
        }
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "search_bench.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    write_markdown(out, result)


def write_markdown(out: Path, result: dict[str, Any]) -> None:
    """``results/search_bench.md`` from what :func:`main` measured."""
    lines = [
        "# search benchmark",
        "",
        "`python benchmarks/search_bench.py` (run with `nice`, 2 shared cores): timm 1.0.31,",
        "torchvision 0.29.1, torch-geometric 2.8.1 (unpacked sources), cold search table.",
        f"1-minute load average at the end: {result['load_average_1m_at_end']} (2 cores).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| modules / blocks | {result['modules']} / {result['blocks']} |",
        f"| in-memory index of the corpora (index_tree, serial) | {result['index_s']} s |",
        f"| search table build (cold, {result['search_table_cold_modules']} modules) "
        f"| {result['search_table_cold_s']} s |",
        f"| search table update, nothing changed | {result['search_table_noop_s'] * 1000:.1f} ms |",
        f"| search table update, one module changed "
        f"({result['search_table_one_module_blocks']} blocks) "
        f"| {result['search_table_one_module_s'] * 1000:.1f} ms |",
        f"| query latency, median of {len(QUERIES)} queries (target <= 20 ms) "
        f"| {result['query_ms_median']} ms |",
        f"| query latency, p95 / max | {result['query_ms_p95']} / {result['query_ms_max']} ms |",
        "",
        "Categories of all blocks: "
        + ", ".join(f"{name} {count}" for name, count in result["categories"].items()),
        "",
        "| query | ms | top hit |",
        "|---|---|---|",
        *(
            f"| {row['query']} | {row['ms']} | {(row['top'] or ['-'])[0]} |"
            for row in result["results"]
        ),
        "",
    ]
    (out / "search_bench.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
