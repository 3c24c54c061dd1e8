"""Discovery recall and precision against a runtime ground truth (torch-geometric, kornia).

The ground truth runs in a child process that imports every indexed module of the corpus
(from the unpacked sources, with the corpus' pure-Python dependencies installed into a
throwaway ``--target`` folder, never into the project venv) and lists the top-level classes
defined there that subclass ``nn.Module``, are not abstract and override ``forward``.

    python benchmarks/discovery_bench.py [--deps DIR]

Writes ``benchmarks/results/discovery_bench.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nnrag.discover import Discovery
from nnrag.index import index_tree

HERE = Path(__file__).resolve().parent
CORPORA = Path("/work/corpora/src")
CASES = {
    "torch_geometric": (CORPORA / "torch_geometric-2.8.1", "torch_geometric", "2.8.1"),
    "kornia": (CORPORA / "kornia-0.9.0", "kornia", "0.9.0"),
}
DEPS = ["kornia_rs", "aiohttp", "psutil", "pyparsing", "requests", "xxhash", "urllib3", "idna"]
DEPS += ["certifi", "charset_normalizer", "multidict", "yarl", "aiosignal", "frozenlist"]
DEPS += ["aiohappyeyeballs", "propcache", "attrs"]

CHILD = r"""
import importlib, inspect, json, sys, warnings
warnings.simplefilter("ignore")
import torch.nn as nn

def overrides_forward(cls):
    for klass in cls.__mro__:
        if "forward" in vars(klass):
            return klass is not nn.Module
    return False

modules = json.loads(sys.stdin.read())
truth, errors = [], {}
for name in modules:
    try:
        module = importlib.import_module(name)
    except BaseException as error:  # a missing optional dependency: the module is not judged
        errors[name] = f"{type(error).__name__}: {error}"[:300]
        continue
    for attr, value in sorted(vars(module).items()):
        if not inspect.isclass(value):
            continue
        # the class defined here under this name; a class decorator may have wrapped it in a
        # subclass made elsewhere (torch_geometric's @deprecated uses type(name, (cls,), {}))
        value = next(
            (k for k in value.__mro__ if k.__module__ == name and k.__qualname__ == attr), None
        )
        if (
            value is not None
            and issubclass(value, nn.Module)
            and not inspect.isabstract(value)
            and overrides_forward(value)
        ):
            truth.append(f"{name}:{attr}")
json.dump({"truth": truth, "errors": errors}, sys.stdout)
"""


def ensure_deps(target: Path) -> None:
    """Install the corpora's pure-Python runtime dependencies into ``target`` (not the venv)."""
    if (target / ".complete").exists():
        return
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
    subprocess.run([*cmd, *DEPS], check=True)
    (target / ".complete").write_text("ok\n")


def ground_truth(root: Path, modules: list[str], deps: Path) -> dict[str, object]:
    """Import ``modules`` from ``root`` in a child process and list the runtime blocks."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(deps)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run(
            [sys.executable, "-c", CHILD],
            input=json.dumps(modules),
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=1800,
            check=True,
        )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def measure(name: str, root: Path, package: str, version: str, deps: Path) -> dict[str, object]:
    """Discovery on the indexed sources vs the runtime ground truth for one corpus."""
    start = time.perf_counter()
    index = index_tree(root / package, source=name)
    indexed = time.perf_counter()
    discovery = Discovery(index)
    blocks = discovery.blocks()
    discovered = time.perf_counter()
    modules = [info.module for info in index.modules()]
    runtime = ground_truth(root, modules, deps)
    errors: dict[str, str] = runtime["errors"]  # type: ignore[assignment]
    truth = set(runtime["truth"])  # type: ignore[call-overload]
    found = {f"{b.module}:{b.name}" for b in blocks}
    judged = {key for key in found if key.split(":")[0] not in errors}
    misses = sorted(truth - found)
    false_positives = sorted(judged - truth)
    recall = 1 - len(misses) / len(truth) if truth else 1.0
    precision = 1 - len(false_positives) / len(judged) if judged else 1.0
    return {
        "corpus": f"{package}=={version}",
        "modules": len(modules),
        "modules_not_importable": len(errors),
        "not_importable": errors,
        "blocks_static": len(blocks),
        "blocks_static_in_importable_modules": len(judged),
        "blocks_runtime": len(truth),
        "recall": round(recall, 4),
        "precision": round(precision, 4),
        "misses": misses,
        "false_positives": false_positives,
        "unjudged_static_blocks": sorted(found - judged),
        "index_s": round(indexed - start, 3),
        "discover_s": round(discovered - indexed, 3),
    }


def write_markdown(results: list[dict[str, object]], path: Path) -> None:
    """A short human-readable summary beside the JSON."""
    lines = [
        "# Discovery benchmark",
        "",
        "Static discovery (`nnrag.discover`, no torch import) vs a runtime ground truth",
        "(child process imports every indexed module; top-level nn.Module subclasses defined",
        "there, not abstract, overriding forward).",
        "Command: `python benchmarks/discovery_bench.py`.",
        "",
        "| corpus | modules | not importable | runtime blocks | static blocks | recall | precision "
        "| discover s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['corpus']} | {r['modules']} | {r['modules_not_importable']} "
            f"| {r['blocks_runtime']} | {r['blocks_static']} | {r['recall']:.2%} "
            f"| {r['precision']:.2%} | {r['discover_s']} |"
        )
    for r in results:
        lines += ["", f"## {r['corpus']}", ""]
        lines.append(f"- misses: {', '.join(r['misses']) or 'none'}")  # type: ignore[arg-type]
        fps = ", ".join(r["false_positives"]) or "none"  # type: ignore[arg-type]
        lines.append(f"- false positives: {fps}")
        unjudged = r["unjudged_static_blocks"]
        lines.append(
            f"- static blocks in modules that do not import here (not judged): {len(unjudged)}"  # type: ignore[arg-type]
        )
        for module, error in sorted(r["not_importable"].items()):  # type: ignore[attr-defined]
            lines.append(f"  - `{module}`: {error}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    """Run every corpus and write the results."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deps", type=Path, default=Path(tempfile.gettempdir()) / "nnrag-gt-deps")
    args = parser.parse_args()
    ensure_deps(args.deps)
    results = [measure(name, *case, deps=args.deps) for name, case in CASES.items()]
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "discovery_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    write_markdown(results, out / "discovery_bench.md")
    for r in results:
        print(
            f"{r['corpus']}: recall {r['recall']:.2%} precision {r['precision']:.2%} "
            f"({r['blocks_runtime']} runtime, {r['blocks_static']} static, "
            f"{len(r['misses'])} misses, {len(r['false_positives'])} false positives)"  # type: ignore[arg-type]
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
