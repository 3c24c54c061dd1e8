"""Discovery recall and precision against a runtime ground truth (torch-geometric, kornia).

The ground truth runs in a child process that imports every indexed module of the corpus
(from the unpacked sources, with the corpus' pure-Python dependencies installed into a
throwaway ``--target`` folder, never into the project venv) and lists the top-level classes
defined there that subclass ``nn.Module``, are not abstract and override ``forward``.

    python benchmarks/discovery_bench.py [--deps DIR]

It also resolves every discovered block of the four corpora (timm, torchvision,
torch-geometric, kornia) on a warm in-memory index and records the time per block and the
problem categories found (resolution only; emission is measured by the extraction benchmark).

Writes ``benchmarks/results/discovery_bench.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from nnrag.extract.resolve import resolve
from nnrag.index.build import index_tree
from nnrag.index.discover import Discovery, discover_blocks

HERE = Path(__file__).resolve().parent
CORPORA = Path("/work/corpora/src")
CASES = {
    "torch_geometric": (CORPORA / "torch_geometric-2.8.1", "torch_geometric", "2.8.1"),
    "kornia": (CORPORA / "kornia-0.9.0", "kornia", "0.9.0"),
}
DEPS = ["kornia_rs", "aiohttp", "psutil", "pyparsing", "requests", "xxhash", "urllib3", "idna"]
DEPS += ["certifi", "charset_normalizer", "multidict", "yarl", "aiosignal", "frozenlist"]
DEPS += ["aiohappyeyeballs", "propcache", "attrs"]

RESOLVE = {
    "timm": (CORPORA / "timm-1.0.31", "timm", "1.0.31"),
    "torchvision": (CORPORA / "torchvision-0.29.1", "torchvision", "0.29.1"),
    **CASES,
}

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
    errors: dict[str, str] = runtime["errors"]  # type: ignore[assignment]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
    truth = set(runtime["truth"])  # type: ignore[call-overload]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
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


def measure_resolution(name: str, root: Path, package: str, version: str) -> dict[str, object]:
    """Resolve every block twice (the second pass, on warm memos, is timed)."""
    index = index_tree(root / package, source=name)
    blocks = discover_blocks(index)
    start = time.perf_counter()
    for block in blocks:
        resolve(index, block)
    cold = time.perf_counter() - start
    times: list[float] = []
    problems: Counter[str] = Counter()
    with_problems = 0
    sizes: list[int] = []
    for block in blocks:
        begin = time.perf_counter()
        closure = resolve(index, block)
        times.append(time.perf_counter() - begin)
        sizes.append(len(closure.units))
        with_problems += bool(closure.problems)
        problems.update(p.category for p in closure.problems)
    times.sort()
    return {
        "corpus": f"{package}=={version}",
        "blocks": len(blocks),
        "first_pass_s": round(cold, 3),
        "median_ms": round(statistics.median(times) * 1000, 3),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1000, 3),
        "max_ms": round(times[-1] * 1000, 3),
        "median_units": statistics.median(sizes),
        "blocks_with_problems": with_problems,
        "problems": dict(sorted(problems.items())),
    }


def write_markdown(
    results: list[dict[str, object]], resolution: list[dict[str, object]], path: Path
) -> None:
    """A short human-readable summary beside the JSON."""
    lines = [
        "# Discovery benchmark",
        "",
        "Static discovery (`nnrag.index.discover`, no torch import) vs a runtime ground truth",
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
    lines += [
        "",
        "Ground truth details: a class counts when the module's attribute of that name is the",
        "class defined there (or a class-decorator wrapper whose MRO contains it, as",
        "torch_geometric's `@deprecated` makes with `type(name, (cls,), {})`); abstract means",
        "`inspect.isabstract` (ABCMeta with unimplemented abstract methods), which is also what",
        "discovery excludes.",
        "",
        "## Resolution on a warm in-memory index (same run)",
        "",
        "| corpus | blocks | median ms | p95 ms | max ms | median units | blocks with problems "
        "| problems |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in resolution:
        problems = ", ".join(f"{k} {v}" for k, v in r["problems"].items())  # type: ignore[attr-defined]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
        lines.append(
            f"| {r['corpus']} | {r['blocks']} | {r['median_ms']} | {r['p95_ms']} | {r['max_ms']} "
            f"| {r['median_units']} | {r['blocks_with_problems']} | {problems or 'none'} |"
        )
    for r in results:
        lines += ["", f"## {r['corpus']}", ""]
        lines.append(f"- misses: {', '.join(r['misses']) or 'none'}")  # type: ignore[arg-type]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
        fps = ", ".join(r["false_positives"]) or "none"  # type: ignore[arg-type]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
        lines.append(f"- false positives: {fps}")
        unjudged = r["unjudged_static_blocks"]
        lines.append(
            f"- static blocks in modules that do not import here (not judged): {len(unjudged)}"  # type: ignore[arg-type]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
        )
        for module, error in sorted(r["not_importable"].items()):  # type: ignore[attr-defined]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
            lines.append(f"  - `{module}`: {error}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    """Run every corpus and write the results."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deps", type=Path, default=Path(tempfile.gettempdir()) / "nnrag-gt-deps")
    args = parser.parse_args()
    ensure_deps(args.deps)
    results = [measure(name, *case, deps=args.deps) for name, case in CASES.items()]
    resolution = [measure_resolution(name, *case) for name, case in RESOLVE.items()]
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    payload = {"discovery": results, "resolution": resolution}
    (out / "discovery_bench.json").write_text(json.dumps(payload, indent=2) + "\n")
    write_markdown(results, resolution, out / "discovery_bench.md")
    for r in results:
        print(
            f"{r['corpus']}: recall {r['recall']:.2%} precision {r['precision']:.2%} "
            f"({r['blocks_runtime']} runtime, {r['blocks_static']} static, "
            f"{len(r['misses'])} misses, {len(r['false_positives'])} false positives)"  # type: ignore[arg-type]  # benchmark results are JSON-shaped dict[str, object]; the value has this type
        )
    for r in resolution:
        print(
            f"{r['corpus']}: resolve median {r['median_ms']} ms, p95 {r['p95_ms']} ms "
            f"({r['blocks']} blocks, {r['blocks_with_problems']} with problems)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
