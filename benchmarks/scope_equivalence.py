"""Same index facts and same check issues from two checkouts (the scope-model merge, issue 11).

``dump`` (run with ``PYTHONPATH`` set to the checkout under test) writes, for every .py file
of timm, torchvision and torch-geometric (/work/corpora/<dist>/unpacked) and of extracted
block files under ``--blocks``, the index's ``analyze_module`` result and the check's
``unresolved_names`` issues to a pickle, with the CPU seconds each took; ``compare`` reads
two such pickles and prints what differs.

    PYTHONPATH=/tmp/old nice python benchmarks/scope_equivalence.py dump /tmp/old.pkl --blocks DIR
    PYTHONPATH=$PWD nice python benchmarks/scope_equivalence.py dump /tmp/new.pkl --blocks DIR
    python benchmarks/scope_equivalence.py compare /tmp/old.pkl /tmp/new.pkl
"""

from __future__ import annotations

import argparse
import ast
import inspect
import pickle
import symtable
import time
from pathlib import Path
from typing import Any

CORPORA = {
    "timm": Path("/work/corpora/timm/unpacked"),
    "torchvision": Path("/work/corpora/torchvision/unpacked"),
    "torch_geometric": Path("/work/corpora/torch-geometric/unpacked"),
}


def _index_facts() -> tuple[dict[str, Any], float]:
    from nnrag.index.units import analyze_module

    facts: dict[str, Any] = {}
    seconds = 0.0
    for source, root in CORPORA.items():
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            module = relative[:-3].replace("/", ".").removesuffix(".__init__")
            data = path.read_bytes()
            started = time.process_time()
            facts[relative] = analyze_module(
                source=source,
                module=module,
                path=relative,
                data=data,
                is_package=path.name == "__init__.py",
            )
            seconds += time.process_time() - started
    return facts, seconds


def _check_issues(blocks: Path | None) -> tuple[dict[str, Any], float]:
    from nnrag.pyscope.scoping import unresolved_names

    old_signature = "table" in inspect.signature(unresolved_names).parameters
    files = sorted(blocks.rglob("*.py")) if blocks else []
    for root in CORPORA.values():
        files += sorted(root.rglob("*.py"))
    issues: dict[str, Any] = {}
    seconds = 0.0
    for path in files:
        code = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(code)
            table = symtable.symtable(code, str(path), "exec")
        except (SyntaxError, ValueError):
            continue
        started = time.process_time()
        found = (
            unresolved_names(tree, table) if old_signature else unresolved_names(tree)
        )  # before the merge it took the symtable
        seconds += time.process_time() - started
        issues[str(path)] = found
    return issues, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dump = commands.add_parser("dump")
    dump.add_argument("out", type=Path)
    dump.add_argument("--blocks", type=Path, default=None, help="extracted block files")
    compare = commands.add_parser("compare")
    compare.add_argument("before", type=Path)
    compare.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        facts, index_seconds = _index_facts()
        issues, check_seconds = _check_issues(args.blocks)
        with args.out.open("wb") as handle:
            pickle.dump({"facts": facts, "issues": issues}, handle)
        print(
            f"{len(facts)} files indexed ({index_seconds:.2f} CPU s in analyze_module), "
            f"{len(issues)} files checked ({check_seconds:.2f} CPU s in unresolved_names)"
        )
        return
    with args.before.open("rb") as handle:
        before = pickle.load(handle)  # our own dump
    with args.after.open("rb") as handle:
        after = pickle.load(handle)  # our own dump
    for kind in ("facts", "issues"):
        old, new = before[kind], after[kind]
        differ = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
        print(f"{kind}: {len(old)} files before, {len(new)} after, {len(differ)} differ")
        for key in differ[:20]:
            print(f"  {key}")


if __name__ == "__main__":
    main()
