"""Block-file lines of one configuration's blocks, re-extracted (no validation).

Builds (or reuses) the index of a repos.json, extracts every block whose source name starts
with ``--prefix`` with a per-block timeout, and records the lines and source files of each
emitted file. Meant for before/after comparisons of the closure on the paper configuration
(run once per code version, each with its own ``PYTHONPATH``):

    PYTHONPATH=$PWD nice python benchmarks/block_lines_bench.py \\
        --repos /work/run/pcwork/repos.json --cache /tmp/cache --label after

Each file's lines are also split into code, docstrings, comments and blank lines, so that a
closure's size can be told apart from the documentation it carries along.

Results: benchmarks/results/block_lines_bench.json (one entry per label, rows included) and .md.
"""

from __future__ import annotations

import argparse
import ast
import os
import signal
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from closure_size_bench import _alarm, _Timeout, save_labelled  # noqa: E402 - benchmarks/ is not a package

PARTS = ("code", "docstring", "comment", "blank")


def composition(code: str) -> dict[str, int]:
    """Lines of ``code`` that are docstrings, comments (whole-line), blank, and the rest."""
    docstrings = 0
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings += (first.end_lineno or first.lineno) - first.lineno + 1
    stripped = [line.strip() for line in code.splitlines()]
    blank = sum(1 for line in stripped if not line)
    comments = sum(1 for line in stripped if line.startswith("#"))
    return {
        "docstring_lines": docstrings,
        "comment_lines": comments,
        "blank_lines": blank,
        "code_lines": len(stripped) - docstrings - comments - blank,
    }


def run(repos: Path, cache: Path, prefix: str, timeout: float) -> list[dict[str, object]]:
    from nnrag.config import load_settings
    from nnrag.extract.block import extract
    from nnrag.workspace import Workspace

    workspace = Workspace(load_settings(repos, cache_dir=cache, environ={}))
    workspace.build()
    index = workspace.index()
    blocks = [b for b in workspace.blocks() if b.source.startswith(prefix)]
    signal.signal(signal.SIGALRM, _alarm)
    rows: list[dict[str, object]] = []
    for block in blocks:
        row: dict[str, object] = {"id": block.id, "source": block.source}
        began = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            extracted = extract(index, block)
            row.update(lines=extracted.code.count("\n"), files=len(extracted.files))
            row.update(composition(extracted.code))
        except _Timeout:
            row["timeout"] = True
        except Exception as error:  # a benchmark records every failure and goes on
            row["error"] = str(error)[:300]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        row["seconds"] = time.perf_counter() - began
        rows.append(row)
    return rows


def summarize(rows: list[dict[str, object]]) -> dict[str, object]:
    lines = [int(r["lines"]) for r in rows if "lines" in r]  # type: ignore[call-overload]  # JSON-shaped rows; the value is an int
    parts = {
        f"{kind}_median": statistics.median(int(r[kind]) for r in rows if kind in r)  # type: ignore[call-overload]  # JSON-shaped rows; the value is an int
        for kind in ("code_lines", "docstring_lines", "comment_lines", "blank_lines")
        if any(kind in r for r in rows)
    }
    return {
        "blocks": len(rows),
        "extracted": len(lines),
        "timeouts": sum(1 for r in rows if r.get("timeout")),
        "errors": sum(1 for r in rows if "error" in r),
        "lines_median": statistics.median(lines) if lines else 0,
        "lines_max": max(lines, default=0),
        "over_20000_lines": sum(1 for v in lines if v > 20_000),
        **parts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--prefix", default="open-mmlab/", help="source names to measure")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per block")
    parser.add_argument("--out", default="block_lines_bench")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = run(args.repos, args.cache, args.prefix, args.timeout)
    sources = sorted({str(r["source"]) for r in rows})
    entry = {
        "label": args.label,
        "prefix": args.prefix,
        "timeout_s": args.timeout,
        "overall": summarize(rows),
        "per_source": {s: summarize([r for r in rows if r["source"] == s]) for s in sources},
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "rows": rows,
    }
    save_labelled(args.out, args.label, entry, write_markdown)


def write_markdown(data: dict[str, dict[str, object]], path: Path) -> None:
    out = ["# Block-file lines", "", "\n\n".join(__doc__.split("\n\n")[1:3]), ""]
    for label, entry in data.items():
        out += [
            f"## {label}",
            "",
            f"prefix `{entry['prefix']}`; per-block timeout {entry['timeout_s']} s; load "
            f"{entry['load_before']} -> {entry['load_after']} (shared machine)",
            "",
            "| source | blocks | extracted | timeouts | lines median | lines max | > 20,000 "
            "| median code / docstring / comment / blank lines |",
            "|---|---|---|---|---|---|---|---|",
        ]
        per: dict[str, dict[str, object]] = entry["per_source"]  # type: ignore[assignment]  # JSON-shaped entry; the value has this type
        for name, row in [("overall", entry["overall"]), *per.items()]:
            out.append(
                f"| {name} | {row['blocks']} | {row['extracted']} | {row['timeouts']} | "  # type: ignore[index]  # JSON-shaped entry; the value is a dict
                f"{row['lines_median']} | {row['lines_max']} | {row['over_20000_lines']} | "  # type: ignore[index]  # JSON-shaped entry; the value is a dict
                + " / ".join(str(row.get(f"{k}_lines_median", "-")) for k in PARTS)  # type: ignore[attr-defined]  # JSON-shaped entry; the value is a dict
                + " |"
            )
        out.append("")
    path.write_text("\n".join(out), encoding="utf-8")


if __name__ == "__main__":
    main()
