"""Index benchmark: cold / warm / one-file-changed indexing vs. plain ast.parse + symtable.

Corpora: timm==1.0.31, torchvision==0.29.1, torch-geometric==2.8.1. By default they are read
from the unpacked copies in /work/corpora/src (copied to a temp folder, so one file can be
changed) as ``path`` sources, which avoids downloads; ``--pypi`` also times the PyPI route
(``pip download`` + unpack) for the same three requirements.

Run: nice python benchmarks/index_bench.py [--pypi] [--jobs N]
Writes benchmarks/results/index_bench.json and .md.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import shutil
import statistics
import symtable
import sys
import tempfile
import time
from pathlib import Path

from nnrag.config import load_settings
from nnrag.index.build import Index, build_index, decode_source, load_index
from nnrag.model import Settings
from nnrag.sources.scan import scan_tree

CORPORA = {
    "timm": ("timm==1.0.31", Path("/work/corpora/src/timm-1.0.31"), "timm"),
    "torchvision": (
        "torchvision==0.29.1",
        Path("/work/corpora/src/torchvision-0.29.1"),
        "torchvision",
    ),
    "torch_geometric": (
        "torch-geometric==2.8.1",
        Path("/work/corpora/src/torch_geometric-2.8.1"),
        "torch_geometric",
    ),
}
CHANGED_FILE = ("timm", "timm/layers/mlp.py")
RESULTS = Path(__file__).parent / "results"


def parse_only(files: list[Path]) -> float:
    """Seconds for read + decode + ast.parse + symtable.symtable over ``files``, one process."""
    started = time.perf_counter()
    for file in files:
        data = file.read_bytes()
        try:
            text = decode_source(data)
            ast.parse(text, filename=str(file))
            symtable.symtable(text, str(file), "exec")
        except (SyntaxError, UnicodeDecodeError, ValueError):
            pass
    return time.perf_counter() - started


def write_repos(folder: Path, roots: dict[str, Path]) -> Path:
    repos = folder / "repos.json"
    sources = [
        {"name": name, "path": str(roots[name]), "paths": [CORPORA[name][2]]} for name in CORPORA
    ]
    repos.write_text(json.dumps(sources, indent=2))
    return repos


def parse_corpora(settings: Settings) -> tuple[dict[str, dict[str, object]], float]:
    """Per corpus: its files and the seconds ``ast.parse`` alone takes on them; and the
    seconds for all the files at once."""
    per_corpus: dict[str, dict[str, object]] = {}
    all_files: list[Path] = []
    for spec in settings.sources:
        entries, _ = scan_tree(Path(spec.location), source=spec.name, paths=spec.paths)
        files = [e.file for e in entries]
        all_files.extend(files)
        per_corpus[spec.name] = {
            "requirement": CORPORA[spec.name][0],
            "files": len(files),
            "parse_only_s": round(parse_only(files), 3),
        }
    return per_corpus, parse_only(all_files)  # the same files again, all at once


def count_corpora(per_corpus: dict[str, dict[str, object]], index: Index) -> None:
    """Add each corpus's modules, lines, blocks and file problems from the built index."""
    from nnrag.index.discover import discover_blocks

    blocks = discover_blocks(index)
    for name, row in per_corpus.items():
        modules = list(index.modules(name))
        row["modules"] = len(modules)
        row["lines"] = sum(m.lines for m in modules)
        row["blocks"] = sum(1 for b in blocks if b.source == name)
        row["problems"] = sum(1 for p in index.problems if p.source == name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=None, help="parse processes (default: cores)")
    parser.add_argument("--pypi", action="store_true", help="also time the PyPI route")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs (median)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="nnrag-index-bench-"))
    try:
        roots = {}
        for name, (_, src, _) in CORPORA.items():
            roots[name] = work / "src" / name
            shutil.copytree(src, roots[name], symlinks=True)
        repos = write_repos(work, roots)
        settings = load_settings(repos, cache_dir=work / "cache", environ={}, jobs=args.jobs)

        per_corpus, parse_total = parse_corpora(settings)
        cold = build_index(settings)
        count_corpora(per_corpus, load_index(settings))

        warm_runs = [build_index(settings) for _ in range(args.repeat)]
        warm = statistics.median(s.seconds for s in warm_runs)
        loads = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            load_index(settings)
            loads.append(time.perf_counter() - started)

        source, rel = CHANGED_FILE
        changed_file = roots[source] / rel
        with changed_file.open("a", encoding="utf-8") as handle:
            handle.write("\n# touched by index_bench\n")
        changed = build_index(settings)

        serial_settings = load_settings(repos, cache_dir=work / "cache-serial", environ={}, jobs=1)
        cold_serial = build_index(serial_settings)

        result: dict[str, object] = {
            "command": " ".join(["nice python benchmarks/index_bench.py", *sys.argv[1:]]),
            "machine": {
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "note": "shared 2-core machine; other processes were running",
            },
            "route": "path sources copied from /work/corpora/src (no download)",
            "corpora": per_corpus,
            "total": {
                "files": cold.files,
                "modules": cold.modules,
                "lines": cold.lines,
                "blocks": cold.blocks,
                "problems": len(cold.problems),
            },
            "parse_only_s": round(parse_total, 3),
            "cold_s": round(cold.seconds, 3),
            "cold_jobs": args.jobs or os.cpu_count(),
            "cold_serial_s": round(cold_serial.seconds, 3),
            "warm_s": round(warm, 3),
            "warm_runs_s": [round(s.seconds, 3) for s in warm_runs],
            "load_index_s": round(statistics.median(loads), 3),
            "one_file_changed_s": round(changed.seconds, 3),
            "one_file_changed_parsed": changed.parsed,
            "cold_over_parse_only": round(cold.seconds / parse_total, 2),
            "cold_serial_over_parse_only": round(cold_serial.seconds / parse_total, 2),
            "warm_over_cold": round(warm / cold.seconds, 4),
            "targets": {"cold_over_parse_only": 2.0, "warm_over_cold": 0.05},
        }
        if args.pypi:
            result["pypi"] = time_pypi(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "index_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "index_bench.md").write_text(render(result))
    print(render(result))
    return 0


def time_pypi(work: Path) -> dict[str, object]:
    """Cold indexing through ``pip download`` (network) for the same three requirements."""
    repos = work / "pypi.json"
    repos.write_text(
        json.dumps(
            [
                {"name": name, "pypi": req, "paths": [package]}
                for name, (req, _, package) in CORPORA.items()
            ]
        )
    )
    settings = load_settings(repos, cache_dir=work / "cache-pypi", environ={})
    stats = build_index(settings)
    warm = build_index(settings)
    return {
        "cold_s": round(stats.seconds, 3),
        "warm_s": round(warm.seconds, 3),
        "files": stats.files,
        "modules": stats.modules,
        "blocks": stats.blocks,
        "source_errors": list(stats.source_errors),
    }


def render(result: dict[str, object]) -> str:
    corpora: dict[str, dict[str, object]] = result["corpora"]  # type: ignore[assignment]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
    lines = [
        "# Index benchmark",
        "",
        f"Command: `{result.get('command', 'nice python benchmarks/index_bench.py')}` "
        f"({result['route']}).",
        f"Machine: {result['machine']}.",
        "",
        "| corpus | files | lines | modules | blocks | file problems | parse-only s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in corpora.values():
        lines.append(
            f"| {row['requirement']} | {row['files']} | {row['lines']} | {row['modules']} | "
            f"{row['blocks']} | {row['problems']} | {row['parse_only_s']} |"
        )
    total: dict[str, object] = result["total"]  # type: ignore[assignment]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
    lines += [
        f"| **all** | {total['files']} | {total['lines']} | {total['modules']} | "
        f"{total['blocks']} | {total['problems']} | {result['parse_only_s']} |",
        "",
        "| measurement | seconds | ratio | target |",
        "|---|---:|---:|---:|",
        f"| ast.parse + symtable only (1 process) | {result['parse_only_s']} | 1.00 | |",
        f"| cold index ({result['cold_jobs']} processes) | {result['cold_s']} | "
        f"{result['cold_over_parse_only']}x parse-only | <= 2x |",
        f"| cold index (1 process) | {result['cold_serial_s']} | "
        f"{result['cold_serial_over_parse_only']}x parse-only | |",
        f"| warm (nothing changed, median) | {result['warm_s']} | "
        f"{float(result['warm_over_cold']) * 100:.1f}% of cold | <= 5% |",  # type: ignore[arg-type]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
        f"| one file changed ({result['one_file_changed_parsed']} parsed) | "
        f"{result['one_file_changed_s']} | | |",
        f"| load_index (new process, warm) | {result['load_index_s']} | | |",
    ]
    if "pypi" in result:
        pypi: dict[str, object] = result["pypi"]  # type: ignore[assignment]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
        lines += [
            "",
            f"PyPI route (pip download + unpack + index): cold {pypi['cold_s']} s, "
            f"warm {pypi['warm_s']} s, {pypi['files']} files, {pypi['blocks']} blocks, "
            f"errors: {pypi['source_errors'] or 'none'}.",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
