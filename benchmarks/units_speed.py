"""Time nnrag.units.analyze_module against plain ast.parse + symtable.symtable on a corpus."""

from __future__ import annotations

import argparse
import ast
import json
import symtable
import sys
import time
from pathlib import Path

from nnrag.model import FileProblem
from nnrag.units import analyze_module, module_name_for

DEFAULT = Path("/work/corpora/src/timm-1.0.31/timm")


def _files(root: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in sorted(root.rglob("*.py"))]


def _baseline(files: list[tuple[Path, bytes]]) -> float:
    start = time.perf_counter()
    for path, data in files:
        try:
            ast.parse(data, filename=str(path))
            symtable.symtable(data.decode("utf-8", "replace"), str(path), "exec")
        except SyntaxError:
            pass
    return time.perf_counter() - start


def _ours(files: list[tuple[Path, bytes]], root: Path) -> tuple[float, int]:
    names = [module_name_for(path, root) for path, _ in files]
    start = time.perf_counter()
    problems = 0
    for (path, data), (module, is_package) in zip(files, names, strict=True):
        info = analyze_module(
            source="bench", module=module, path=str(path), data=data, is_package=is_package
        )
        problems += isinstance(info, FileProblem)
    return time.perf_counter() - start, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = _files(args.root)
    lines = sum(data.count(b"\n") for _, data in files)
    base = min(_baseline(files) for _ in range(args.repeat))
    runs = [_ours(files, args.root.parent) for _ in range(args.repeat)]
    ours = min(t for t, _ in runs)
    result = {
        "corpus": str(args.root),
        "files": len(files),
        "lines": lines,
        "problems": runs[0][1],
        "ast_parse_plus_symtable_s": round(base, 3),
        "analyze_module_s": round(ours, 3),
        "ratio": round(ours / base, 2),
        "python": sys.version.split()[0],
        "repeat": args.repeat,
    }
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "units_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "units_speed.md").write_text(
        f"# units speed\n\n`python benchmarks/units_speed.py` on {result['corpus']} "
        f"({result['files']} files, {lines} lines), best of {args.repeat}:\n\n"
        f"| ast.parse + symtable | analyze_module | ratio |\n|---|---|---|\n"
        f"| {result['ast_parse_plus_symtable_s']} s | {result['analyze_module_s']} s "
        f"| {result['ratio']} |\n"
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
