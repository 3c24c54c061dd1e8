"""Benchmark: `nnrag check --fix` re-closing hand-edited vendored timm blocks.

Vendors up to N closed blocks spread over timm 1.0.31's discovered blocks (`extract --into`,
not timed) into benchmarks/.work/vendor_fix/, then edits each as a user would, alternating:

- "name": a new function at the end uses a name timm defines but the block does not
  (`DropPath`, `trunc_normal_`, `to_2tuple`, ... the first one not already in the file);
- "import": the same, through `from timm.layers import <name> as _Alias` (a source import).

Then runs the fix over all files in one process (one index, one LibCST import) and checks each
result: static check clean but for NNR012, the pristine finding naming only the user's own
function (nnrag's additions are stamped), and, with --import, the sandboxed import.

    python benchmarks/vendor_fix_bench.py [--blocks 20] [--no-import]

Writes benchmarks/results/vendor_fix_bench.json and .md. The machine may be shared: the load
average is recorded beside the timing.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from nnrag.check import static
from nnrag.check.static import Importer
from nnrag.model import Diagnostic
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import validate_file

HERE = Path(__file__).resolve().parent
TIMM = Path("/work/corpora/src/timm-1.0.31")
WORK = HERE / ".work" / "vendor_fix"
RESULTS = HERE / "results"
NAMES = ("DropPath", "trunc_normal_", "to_2tuple", "make_divisible", "LayerNorm2d", "GluMlp")


def vendor(count: int, cache: Path) -> tuple[list[Path], object]:
    from nnrag.model import Settings, SourceSpec
    from nnrag.vendor import vendor_blocks
    from nnrag.workspace import Workspace

    spec = SourceSpec(name="timm", kind="path", location=str(TIMM), paths=("timm",))
    workspace = Workspace(Settings(sources=(spec,), cache_dir=cache))
    blocks = workspace.blocks()
    step = max(1, len(blocks) // (count * 2))
    into = WORK / "vendor"
    if into.exists():
        shutil.rmtree(into)
    files: list[Path] = []
    for block in blocks[::step]:
        (outcome,) = vendor_blocks(workspace, [block.id], into, force=False)
        if outcome.action == "written" and outcome.file is not None:
            files.append(outcome.file)
        if len(files) == count:
            break
    return files, Settings(sources=(spec,), cache_dir=cache)


def edit(path: Path, number: int) -> str:
    """Make a user's edit that needs one more timm definition; the name used."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    defined = {getattr(node, "name", None) for node in tree.body}
    defined |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    defined |= {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    name = next(n for n in NAMES if n not in defined)
    if number % 2:
        use = f"from timm.layers import {name} as _Alias\n\n\n"
        use += "def _user_helper():\n    return _Alias\n"
    else:
        use = f"def _user_helper():\n    return {name}\n"
    marker = "\n\n__all__ = "
    path.write_text(text.replace(marker, f"\n\n{use}{marker}", 1), encoding="utf-8")
    return name


def _mentioned(message: str) -> list[str]:
    """Definitions an NNR012 message names (``changed X (lines ..), added Y (line ..)``)."""
    _, found, listed = message.partition(": changed ")
    if not found:
        return []
    names = []
    for part in listed.split(", "):
        words = part.split()
        names.append(words[1] if words[0] in ("added", "removed") else words[0])
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--no-import", action="store_true", help="skip the sandboxed import")
    args = parser.parse_args()
    if not TIMM.is_dir():
        print(f"timm is not unpacked at {TIMM}", file=sys.stderr)
        return 2
    with Sandbox() as sandbox:  # one sandbox (one torch import) for every sandboxed import
        return measure(args, functools.partial(validate_file, depth="import", sandbox=sandbox))


def measure(args: argparse.Namespace, importer: Importer) -> int:
    from nnrag.check.static import check_code, pristine_findings
    from nnrag.vendor import read_manifest
    from nnrag.vendoring.fix import fix_files

    def import_findings(path: Path) -> tuple[Diagnostic, ...]:
        return static.import_findings(path, importer=importer)

    files, settings = vendor(args.blocks, WORK / "cache")
    before = {  # blocks that do not import here as extracted (a missing package, ...)
        path: not import_findings(path) for path in files if not args.no_import
    }
    used = {path: edit(path, number) for number, path in enumerate(files)}
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    results = fix_files(files, settings=settings)  # type: ignore[arg-type]  # vendor() returns the Settings it used, typed object
    seconds = time.perf_counter() - started
    load_after = os.getloadavg()[0]
    # what nnrag wrote, after the fix updated the manifest (its own additions are in it)
    definitions = {entry.file: entry.definitions for entry in read_manifest(WORK / "vendor")}
    rows = []
    for path, result in zip(files, results, strict=True):
        text = path.read_text(encoding="utf-8")
        findings = [f for f in check_code(text, filename=str(path)) if f.code != "NNR012"]
        pristine = pristine_findings(text, definitions=definitions.get(path.name))
        message = pristine[0].message if pristine else ""
        only_user = _mentioned(message) == ["_user_helper"]
        imported = None
        if not args.no_import and not findings:
            imported = not import_findings(path)
        rows.append(
            {
                "file": path.name,
                "name": used[path],
                "edit": "import" if files.index(path) % 2 else "name",
                "changed": bool(result.changes),
                "unfixable": list(result.unfixable),
                "closed_after_fix": not findings,
                "findings": [f"{f.code} {f.message}" for f in findings],
                "pristine_names_only_user_edit": only_user,
                "pristine_message": message,
                "imports_in_sandbox": imported,
                "imported_before_edit": before.get(path),
            }
        )
    closed = sum(r["closed_after_fix"] for r in rows)
    summary = {
        "corpus": "timm 1.0.31 (path source)",
        "blocks": len(rows),
        "fixed_and_closed": closed,
        "pristine_names_only_user_edit": sum(r["pristine_names_only_user_edit"] for r in rows),
        "imports_in_sandbox": None
        if args.no_import
        else sum(bool(r["imports_in_sandbox"]) for r in rows),
        "imported_before_edit": None
        if args.no_import
        else sum(bool(r["imported_before_edit"]) for r in rows),
        "fix_wall_s_all_files": round(seconds, 2),
        "fix_wall_s_per_file": round(seconds / max(len(rows), 1), 2),
        "load_1min_before_after": [round(load_before, 2), round(load_after, 2)],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared with other jobs",
        "python": platform.python_version(),
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "vendor_fix_bench.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_markdown(summary, seconds=seconds, loads=(load_before, load_after))
    return 0


def write_markdown(summary: dict[str, Any], *, seconds: float, loads: tuple[float, float]) -> None:
    """``results/vendor_fix_bench.md`` from what :func:`main` measured."""
    rows, closed = summary["rows"], summary["fixed_and_closed"]
    load_before, load_after = loads
    only = summary["pristine_names_only_user_edit"]
    lines = [
        "# check --fix on hand-edited vendored timm blocks",
        "",
        f"- blocks: {len(rows)} (edits alternate: an undefined timm name / a timm import)",
        f"- closed after fix (static check, NNR012 aside): {closed} of {len(rows)}",
        f"- --pristine names only the user's function: {only} of {len(rows)}",
        f"- sandboxed import passes after fix: {summary['imports_in_sandbox']} of {len(rows)} "
        f"(as vendored, before the edit: {summary['imported_before_edit']})",
        f"- fix, all files in one process: {seconds:.1f} s "
        f"({seconds / max(len(rows), 1):.2f} s per file), "
        f"load {load_before:.1f} -> {load_after:.1f} on a shared {os.cpu_count()}-core machine",
        "",
        "| file | edit | name | closed | pristine: only user | imports (before) | unfixable |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['file']} | {r['edit']} | {r['name']} | {r['closed_after_fix']} | "
            f"{r['pristine_names_only_user_edit']} | {r['imports_in_sandbox']} "
            f"({r['imported_before_edit']}) | {'; '.join(r['unfixable'])[:80]} |"
            for r in rows
        ),
    ]
    (RESULTS / "vendor_fix_bench.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:8]))


if __name__ == "__main__":
    sys.exit(main())
