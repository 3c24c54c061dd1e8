"""Time nnrag.index.units.analyze_module against ast.parse + symtable.symtable; check it on corpora.

Run: ``nice python benchmarks/units_speed.py`` (writes ``benchmarks/results/units_speed.*``).

1. Speed: best-of-N CPU time (``time.process_time``, runs interleaved: the machine is
   shared) of ``analyze_module`` over every ``.py`` file of the timm sdist versus plain
   ``ast.parse`` + ``symtable.symtable`` over the same files.
2. Robustness and scoping: ``analyze_module`` over every ``.py`` file of every corpus in
   ``/work/corpora/src``; any exception is a crash. Each module's reads and binds are
   cross-checked against the compiler's symbol tables: every root name nnrag reports as
   read must be a global (or module-level) symbol for :mod:`symtable`, and the module
   names bound must be exactly the ones :mod:`symtable` sees assigned or imported.
"""

from __future__ import annotations

import argparse
import ast
import json
import symtable
import sys
import time
from pathlib import Path

from nnrag.index.units import analyze_module, module_name_for
from nnrag.model import Diagnostic, ModuleInfo
from nnrag.report import format_diagnostic

CORPORA = Path("/work/corpora/src")
SPEED = CORPORA / "timm-1.0.31"


def _files(root: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in sorted(root.rglob("*.py"))]


def _baseline(files: list[tuple[Path, bytes]]) -> float:
    start = time.process_time()
    for path, data in files:
        try:
            ast.parse(data, filename=str(path))
            symtable.symtable(data.decode("utf-8-sig", "replace"), str(path), "exec")
        except SyntaxError:
            pass
    return time.process_time() - start


def _ours(files: list[tuple[Path, bytes]], root: Path) -> float:
    names = [module_name_for(path, root) for path, _ in files]
    start = time.process_time()
    for (path, data), (module, is_package) in zip(files, names, strict=True):
        analyze_module(
            source="bench", module=module, path=str(path), data=data, is_package=is_package
        )
    return time.process_time() - start


def _symtable_names(code: str, path: str) -> tuple[set[str], set[str]]:
    """(names read as globals anywhere, names bound at module level) per the compiler."""
    reads: set[str] = set()
    binds: set[str] = set()

    def walk(table: symtable.SymbolTable) -> None:
        kind = table.get_type()
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if kind == "module":
                if symbol.is_referenced():
                    reads.add(name)
                if symbol.is_assigned() or symbol.is_imported():
                    binds.add(name)
                continue
            if symbol.is_global() and symbol.is_referenced():
                reads.add(name)
            if symbol.is_declared_global() and symbol.is_assigned():
                binds.add(name)
            if kind == "class" and symbol.is_local() and symbol.is_referenced():
                reads.add(name)  # LOAD_NAME: global when read before the class binds it
        for child in table.get_children():
            walk(child)

    walk(symtable.symtable(code, path, "exec"))
    return reads, binds


def _check(info: ModuleInfo, data: bytes, path: str) -> list[str]:
    # symtable skips PEP 563 annotations; nnrag keeps them as call-time reads
    code = data.decode("utf-8-sig", "replace")
    code = code.replace("import annotations", "import generator_stop")
    st_reads, st_binds = _symtable_names(code, path)
    reads = {c.split(".")[0] for u in info.units for c in (*u.load_reads, *u.call_reads)}
    binds = {b for u in info.units for b in u.binds}
    binds -= {"annotations"} if "annotations" in info.future else set()
    st_binds -= {"generator_stop"}
    issues = [f"{path}: read {n!r} is not global for symtable" for n in sorted(reads - st_reads)]
    previous = 0
    for unit in info.units:  # units are ordered, disjoint, and within the file
        if not previous < unit.start_line <= unit.end_line <= info.lines:
            issues.append(f"{path}: unit {unit.index} spans {unit.start_line}-{unit.end_line}")
        previous = unit.end_line
    issues += [f"{path}: binds differ on {n!r}" for n in sorted(binds ^ st_binds)]
    return issues


def _corpus(root: Path) -> dict[str, object]:
    counts = {"files": 0, "lines": 0, "modules": 0, "units": 0, "problems": 0, "crashes": 0}
    issues: list[str] = []
    problems: list[str] = []
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        module, is_package = module_name_for(path, root)
        counts["files"] += 1
        counts["lines"] += data.count(b"\n")
        try:
            info = analyze_module(
                source=root.name, module=module, path=str(path), data=data, is_package=is_package
            )
        except Exception as error:  # the point of the run: count crashes, never stop
            counts["crashes"] += 1
            issues.append(f"{path}: crash {error!r}")
            continue
        if isinstance(info, Diagnostic):
            counts["problems"] += 1
            problems.append(format_diagnostic(info))
            continue
        counts["modules"] += 1
        counts["units"] += len(info.units)
        try:
            issues += _check(info, data, str(path))
        except SyntaxError as error:
            issues.append(f"{path}: symtable rejects the file: {error}")
    return {**counts, "scoping_mismatches": len(issues), "examples": issues[:20],
            "file_problems": problems[:20]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = _files(SPEED)
    bases, ours_runs = [], []
    for _ in range(args.repeat):  # interleaved: the machine is shared, load drifts
        bases.append(_baseline(files))
        ours_runs.append(_ours(files, SPEED))
    base, ours = min(bases), min(ours_runs)
    corpora = {root.name: _corpus(root) for root in sorted(CORPORA.iterdir()) if root.is_dir()}
    speed: dict[str, object] = {
        "corpus": str(SPEED),
        "files": len(files),
        "lines": sum(data.count(b"\n") for _, data in files),
        "ast_parse_plus_symtable_s": round(base, 3),
        "analyze_module_s": round(ours, 3),
        "ratio": round(ours / base, 2),
        "repeat": args.repeat,
    }
    python = sys.version.split()[0]
    result = {"speed": speed, "corpora": corpora, "python": python}
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "units_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = "\n".join(
        f"| {name} | {c['files']} | {c['lines']} | {c['units']} | {c['problems']} "
        f"| {c['crashes']} | {c['scoping_mismatches']} |"
        for name, c in corpora.items()
    )
    (out / "units_speed.md").write_text(
        "# units: speed and corpus check\n\n"
        f"`nice python benchmarks/units_speed.py` (Python {python}).\n\n"
        f"Speed on {speed['corpus']} ({speed['files']} files, {speed['lines']} lines), "
        f"CPU seconds, best of {args.repeat} interleaved runs:\n\n"
        "| ast.parse + symtable | analyze_module | ratio |\n|---|---|---|\n"
        f"| {speed['ast_parse_plus_symtable_s']} s | {speed['analyze_module_s']} s "
        f"| {speed['ratio']} |\n\n"
        "Every `.py` file of every corpus (scoping cross-checked against symtable):\n\n"
        "| corpus | files | lines | units | file problems | crashes | scoping mismatches |\n"
        f"|---|---|---|---|---|---|---|\n{rows}\n"
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
