"""How well the plugin's collection-time estimate orders blocks, on every corpus with measured
block times (validate_bench results), and what it does to a two-worker harvest pass.

For each corpus: the index is built with the configuration validate_bench used, each block's
estimate is computed (``pytest_nnrag.schedule.block_estimates``), and compared with the
block's measured seconds (Spearman). The pass is then replayed on two workers
(``order_bench.share_balance``): fixed shares by id (before) against blocks taken one at a time.

Run: ``TMPDIR=/work/tmp/me PYTHONPATH=$PWD nice -n 10 .venv/bin/python
benchmarks/order_estimate_bench.py``. Writes benchmarks/results/order_estimate_bench.{json,md}.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from order_bench import share_balance  # the sibling script, by path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SRC = Path("/work/corpora/src")
CORPORA: dict[str, tuple[list[dict[str, Any]] | None, str]] = {
    "timm": ([{"name": "timm", "path": str(SRC / "timm-1.0.31")}], "validate_bench_timm_after2"),
    "torchvision": (
        [{"name": "torchvision", "path": str(SRC / "torchvision-0.29.1")}],
        "validate_bench_torchvision",
    ),
    "torch_geometric": (
        [{"name": "torch_geometric", "path": str(SRC / "torch_geometric-2.8.1")}],
        "validate_bench_torch_geometric",
    ),
    "transformers": (None, "validate_bench_transformers_final"),  # its bench's own sources
}
ROWS = (
    ("fixed_by_id", "fixed shares by id (before)"),
    ("taken_by_id", "taken, by id"),
    ("taken_by_estimate", "taken, estimate first (now, fresh cache)"),
    ("taken_by_recorded", "taken, recorded first (now, next runs)"),
    ("taken_quick_first", "taken, slowest last (worst)"),
)


def main() -> None:
    work = Path(os.environ.get("ORDER_ESTIMATE_WORK") or tempfile.mkdtemp(prefix="order-est-"))
    work.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"load_before": Path("/proc/loadavg").read_text().split()[:3]}
    for name, (sources, bench) in CORPORA.items():
        measured = json.loads((RESULTS / f"{bench}.json").read_text())[0]
        repos = work / f"{name}.json"
        repos.write_text(json.dumps(sources or measured["sources"]))
        seconds = {block_id: float(row[3]) for block_id, row in measured["results"].items()}
        data[name] = {"times": bench, **share_balance(seconds, work / f"cache-{name}", repos)}
        print(name, data[name]["spearman"], flush=True)
    data["load_after"] = Path("/proc/loadavg").read_text().split()[:3]
    lines = [
        "# order_estimate_bench",
        "",
        "The plugin's collection-time estimate of a block (lines its class reaches in its "
        "module, plus 10 per name it reads) against the block's measured seconds "
        "(validate_bench results), and the seconds one of two workers idles at the end of a "
        "harvest pass replayed with those times. Command: `python "
        "benchmarks/order_estimate_bench.py`; load "
        f"{' '.join(data['load_before'])} (only index builds and replays: CPU-light).",
        "",
        "| corpus | blocks | Spearman | " + " | ".join(label for _, label in ROWS) + " |",
        "|---|---|---|" + "---|" * len(ROWS),
    ]
    for name in CORPORA:
        row = data[name]
        idle = " | ".join(str(row[key]["idle_s"]) for key, _ in ROWS)
        lines.append(f"| {name} | {row['blocks']} | {row['spearman']} | {idle} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "order_estimate_bench.json").write_text(json.dumps(data, indent=2) + "\n")
    (RESULTS / "order_estimate_bench.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
