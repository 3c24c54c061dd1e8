"""Extracted blocks identical to their originals: OpenMMLab, transformers, ultralytics.

The sources of the NN-RAG paper's configuration (``paths``, ``priority`` as the reference
``repo_config.json`` writes them, each repository replaced by its released wheel under
``/work/corpora/<dist>/unpacked``, see ``paper_config_bench.py``): mmdet 3.3.0,
mmsegmentation 1.2.2, mmpose 1.3.2, mmpretrain 1.2.0 with mmengine 0.10.7 and mmcv-lite
2.2.0, transformers 4.57.6 (models/bert, opt, clip, vit, swin, modeling_utils,
activations, modeling_outputs) and ultralytics 8.4.190.

1. validate: every sampled block goes through nnrag's own ``Workspace.validate`` to
   ``forward`` (extraction, the sandbox, the probe; results cached under ``--work``), in
   ``--shards`` processes. A block that reaches ``forward`` has a recorded recipe:
   constructor arguments, inputs, seeds.
2. compare: per source, one worker process imports the original packages once (from the
   unpacked releases the configuration points at, first on the path) and forks a child per
   block (``--timeout`` s): the block file and the original class (``importlib`` of the
   block's module) are built from the recipe with the same seeds (a block-local class in the
   recipe maps to the original class of the same qualified name, by the block's list of
   inlined definitions); state_dict keys, shapes,
   dtypes and values, then the forward outputs (eval, no_grad) are compared, exactly
   (a value that agrees only within rtol 1e-6 / atol 1e-7 is counted identical and listed
   as inexact). The original is built and run twice; if the two disagree it is
   ``original-nondeterministic`` (not comparable). The comparison code is shared with
   ``extract_bench.py`` (``benchmarks/equivalence.py``).

Usage (the benchmark environment: the originals' dependencies; machine shared)::

    PYTHONPATH=$PWD nice /work/benchenv/bin/python benchmarks/identical_bench.py \\
        --work /tmp/identical --per-source 80

Results: benchmarks/results/identical_bench.{json,md}.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from equivalence import run_workers  # noqa: E402 - benchmarks/ is not a package
from paper_config_bench import REFERENCE, RELEASES, mapped_paths, materialize  # noqa: E402

RESULTS = HERE / "results"
SOURCES = (
    "open-mmlab/mmdetection",
    "open-mmlab/mmsegmentation",
    "open-mmlab/mmpose",
    "open-mmlab/mmpretrain",
    "open-mmlab/mmengine",
    "open-mmlab/mmcv",
    "huggingface/transformers",
    "ultralytics/yolov8",
)
"""Reference keys of the sources checked (mmengine and mmcv: the frameworks beside them)."""
FAMILY = {s: ("OpenMMLab" if s.startswith("open-mmlab/") else s.split("/")[1]) for s in SOURCES}
COMPARABLE = {"identical", "DIFFERENT"}
STAND_INS = (
    "OpenMMLab workers: `mmcv.__version__` reads 2.1.0 (mmdet 3.3.0, mmseg 1.2.2 and "
    "mmpretrain 1.2.0 assert mmcv < 2.2.0 at import; the installed mmcv-lite is 2.2.0)",
    "OpenMMLab workers: `mmcv._ext` (mmcv-lite has no compiled ops; mmpose.models imports "
    "mmcv.ops through edpose_head), `torchvision` (no CPU build for torch 2.13; "
    "mmpretrain.models.utils.box_utils imports it) and `xtcocotools` (its wheel is built for "
    "numpy 1; mmpose's datasets import it) are stand-in modules whose every attribute raises "
    "when used",
    "OpenMMLab workers: transformers.modeling_utils gets `apply_chunking_to_forward`, "
    "`find_pruneable_heads_and_indices`, `prune_linear_layer` from transformers.pytorch_utils "
    "and `GenerationMixin` from transformers.generation (mmpretrain 1.2.0 imports them from "
    "their old place)",
    "ultralytics worker: `importlib.metadata.version('torchvision')` answers 0.29.1 "
    "(ultralytics reads it at import; torchvision is not installed)",
)
"""What the comparison workers change so the installed originals import here (the extracted
blocks passed validation without any of it; a compared original that used a stand-in would
fail, not compare)."""


# --------------------------------------------------------------------------- configuration


def assemble(work: Path) -> tuple[Path, dict[str, Any]]:
    """repos.json with the reference entries of :data:`SOURCES` (``path`` to each wheel)."""
    reference = json.loads(REFERENCE.read_text())
    config: dict[str, Any] = {}
    info: dict[str, Any] = {}
    for key in SOURCES:
        entry = reference[key]
        root = materialize(RELEASES[key])
        paths, notes = mapped_paths(list(entry.get("paths", [])), root)
        config[key] = {"path": str(root), "priority": entry.get("priority", 0), "paths": paths}
        info[key] = {"distribution": RELEASES[key], "root": str(root), "paths": notes}
    work.mkdir(parents=True, exist_ok=True)
    repos = work / "repos.json"
    repos.write_text(json.dumps(config, indent=2))
    return repos, info


def workspace(repos: Path, cache: Path) -> Any:
    from nnrag.config import load_settings
    from nnrag.workspace import Workspace

    return Workspace(load_settings(repos, cache_dir=cache, environ={}, timeout_s=60.0))


def sample(blocks: list[Any], per_source: int | None) -> list[Any]:
    """An even sample of each source's blocks in id order (ids cluster by package),
    interleaved across sources."""
    per: list[list[Any]] = []
    for source in SOURCES:
        mine = [b for b in blocks if b.source == source]
        if per_source is not None and len(mine) > per_source:
            step = len(mine) / per_source
            mine = [mine[int(i * step)] for i in range(per_source)]
        per.append(mine)
    # interleaved (one of each source in turn): a run stopped early is still balanced
    return [b for group in itertools.zip_longest(*per) for b in group if b is not None]


# --------------------------------------------------------------------------- phase 1: validate


def validate_shard(repos: Path, cache: Path, ids: list[str], out: Path) -> None:
    """Validate ``ids`` to forward with nnrag's own API; one JSON row per block in ``out``."""
    from nnrag.errors import NnragError

    ws = workspace(repos, cache)
    done = set()
    if out.exists():
        done = {json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()}
    with out.open("a") as sink:
        for block_id in ids:
            if block_id in done:
                continue
            started = time.monotonic()
            row: dict[str, Any] = {"id": block_id}
            try:
                block = ws.find(block_id)
                result = ws.validate(block, depth="forward")
                extracted = ws.extract(block)
            except NnragError as error:
                row.update(stage_reached=None, failed_stage="extract", category="error")
                row["message"] = str(error)[:300]
            else:
                row.update(
                    source=block.source,
                    module=block.module,
                    name=block.name,
                    stage_reached=result.stage_reached,
                    failed_stage=result.failed_stage,
                    category=result.category,
                    message=result.message[:300],
                    file=result.file,
                    recipe=dataclasses.asdict(result.recipe) if result.recipe else None,
                    dependencies=list(extracted.dependencies),
                    source_packages=sorted(ws.index().source_packages(block.source)),
                    lines=extracted.lines,
                )
            row["seconds"] = round(time.monotonic() - started, 2)
            sink.write(json.dumps(row, default=str) + "\n")
            sink.flush()
    ws.close()


def validate_all(repos: Path, cache: Path, ids: list[str], shards: int, work: Path) -> list[dict]:
    """Phase 1 in ``shards`` processes (round-robin over ``ids``); rows in ``ids`` order."""
    processes = []
    outs = []
    for shard in range(shards):
        mine = ids[shard::shards]
        (work / f"ids{shard}.json").write_text(json.dumps(mine))
        out = work / f"validated{shard}.jsonl"
        outs.append(out)
        command = [sys.executable, __file__, "--validate-shard", str(repos), str(cache)]
        command += [str(work / f"ids{shard}.json"), str(out)]
        processes.append(subprocess.Popen(command))
    for process in processes:
        process.wait()
    rows = {}
    for out in outs:
        if out.exists():
            for line in out.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    rows[row["id"]] = row
    return [rows.get(i, {"id": i, "failed_stage": "harness", "message": "no row"}) for i in ids]


# --------------------------------------------------------------------------- phase 2: compare

COMPARE_WORKER = textwrap.dedent(
    r"""
    import importlib, json, os, signal, sys
    sys.path.insert(0, BENCHMARKS)
    jobs = json.load(open(sys.argv[1]))
    out = open(sys.argv[2], "a")
    start = int(sys.argv[3])
    import torch
    torch.set_num_threads(1)
    from equivalence import TIGHT, compare_blocks

    def original_environment(source):
        # what the installed originals need to import here, and nothing a compared block
        # uses (the extracted side passed validation without any of it; each stand-in is
        # listed in the results)
        import importlib.abc, importlib.machinery, importlib.metadata, types

        def stand_in(name):
            def missing(*args, **kwargs):
                raise NotImplementedError(f"{name}: stand-in")
            return Missing(name, (), {"__init__": missing, "__call__": missing})

        class Missing(type):  # a stand-in class: any attribute is another stand-in
            def __getattr__(cls, attr):
                if attr.startswith("__"):
                    raise AttributeError(attr)
                return stand_in(f"{cls.__name__}.{attr}")

        class StandIn(types.ModuleType):
            def __getattr__(self, attr):
                if attr.startswith("__"):
                    raise AttributeError(attr)
                return stand_in(f"{self.__name__}.{attr}")

        class StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
            def __init__(self, tops):
                self.tops = tops
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] not in self.tops:
                    return None
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            def create_module(self, spec):
                return StandIn(spec.name)
            def exec_module(self, module):
                module.__path__ = []

        if source.startswith("open-mmlab/"):
            import mmcv  # mmdet 3.3.0, mmseg 1.2.2, mmpretrain 1.2.0 assert mmcv < 2.2.0
            mmcv.__version__ = "2.1.0"
            # mmcv-lite has no compiled ops but the packages' __init__ import every op module
            # (mmpose.models -> edpose_head -> mmcv.ops); xtcocotools (mmpose's datasets) is
            # built for numpy 1; torchvision (mmpretrain.models.utils.box_utils) has no CPU
            # build for torch 2.13
            sys.modules.pop("mmcv._ext", None)
            sys.meta_path.insert(0, StandIns({"torchvision", "xtcocotools"}))
            sys.modules["mmcv._ext"] = StandIn("mmcv._ext")
            # mmpretrain 1.2.0 (imported by mmdet.models) imports three helpers from
            # transformers.modeling_utils that transformers 4.57 keeps in pytorch_utils
            from transformers import modeling_utils, pytorch_utils
            for name in ("apply_chunking_to_forward", "find_pruneable_heads_and_indices",
                         "prune_linear_layer"):
                if not hasattr(modeling_utils, name):
                    setattr(modeling_utils, name, getattr(pytorch_utils, name))
            if not hasattr(modeling_utils, "GenerationMixin"):  # likewise, from .generation
                from transformers.generation import GenerationMixin
                modeling_utils.GenerationMixin = GenerationMixin
        if source.startswith("ultralytics/"):
            # ultralytics reads torchvision's version at import; its model code does not
            # import torchvision
            real_version = importlib.metadata.version
            def version(name):
                return "0.29.1" if name == "torchvision" else real_version(name)
            importlib.metadata.version = version

    if jobs[start:]:
        original_environment(jobs[start]["id"].split(":")[0])
    from nnrag.validate.probe.runner import load

    def original_ref(job):
        owners = {}
        for qualified in job["dependencies"]:
            module, _, name = qualified.rpartition(".")
            owners.setdefault(name, set()).add(module)
        owners.setdefault(job["name"], set()).add(job["module"])
        def mapping(qualname):
            first = qualname.split(".")[0]
            found = owners.get(first, set())
            if len(found) != 1:
                raise LookupError(f"block-local {qualname!r} has {len(found)} originals")
            return f"{next(iter(found))}:{qualname}"
        return mapping

    def compare(job):
        try:
            original = getattr(importlib.import_module(job["module"]), job["name"])
        except BaseException as error:
            return {"status": "original-import-fails",
                    "message": f"{type(error).__name__}: {error}"[:300]}
        module = load(job["file"])
        extracted = getattr(module, job["name"])
        try:
            return compare_blocks(extracted, original, job["recipe"], original_ref(job),
                                  tolerance=TIGHT)
        except LookupError as error:
            if "originals" in str(error):
                return {"status": "unmappable-value", "message": str(error)}
            raise

    for position in range(start, len(jobs)):
        job = jobs[position]
        try:  # the original package once per worker: children fork with it imported
            importlib.import_module(job["module"])
        except BaseException:
            pass
        pid = os.fork()
        if pid == 0:
            signal.alarm(TIMEOUT)
            try:
                row = compare(job)
            except BaseException as error:
                message = f"{type(error).__name__}: {error}"[:300]
                row = {"status": "harness-error", "message": message}
            row.update(position=position, id=job["id"])
            out.write(json.dumps(row, default=str) + "\n"); out.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            out.write(json.dumps({"position": position, "id": job["id"], "status": "crash",
                                  "message": f"child exit status {status} (timeout: "
                                  f"{TIMEOUT} s)"}) + "\n"); out.flush()
    """
)


def original_packages(work: Path) -> dict[str, str]:
    """The compare workers' environment: the sources' own trees (the unpacked releases the
    configuration points at) first on ``PYTHONPATH``, so the originals import from the very
    files nnrag extracted from; the benchmark environment holds only their dependencies."""
    env = dict(os.environ)
    config = json.loads((work / "repos.json").read_text())
    roots = list(dict.fromkeys(str(entry["path"]) for entry in config.values()))
    env["PYTHONPATH"] = os.pathsep.join([*roots, *filter(None, [env.get("PYTHONPATH")])])
    return env


def compare_all(
    validated: list[dict],
    timeout: int,
    work: Path,
    parallel: int,
    only: set[str],
    *,
    retry: bool = False,
) -> list[dict]:
    """Phase 2 for every block that reached forward with a recipe: one worker per source,
    ``parallel`` at a time. Rows are kept in ``work/compared.jsonl`` by block id and recipe,
    and a later run compares only what is new (``retry``: and what could not be compared)."""
    env = original_packages(work)
    worker = COMPARE_WORKER.replace("BENCHMARKS", repr(str(HERE))).replace("TIMEOUT", str(timeout))
    store = work / "compared.jsonl"
    known: dict[str, dict] = {}
    if store.exists():
        for line in store.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if retry and row["status"] not in {*COMPARABLE, "original-nondeterministic"}:
                    continue
                known[row["key"]] = row

    def key(row: dict) -> str:
        return row["id"] + "\0" + json.dumps(row["recipe"], sort_keys=True, default=str)

    todo = [r for r in validated if passed(r) and key(r) not in known]
    lock = threading.Lock()

    def one_source(source: str) -> None:
        jobs = [
            {k: r[k] for k in ("id", "module", "name", "file", "recipe", "dependencies")}
            for r in todo
            if r.get("source") == source
        ]
        if not jobs:
            return
        print(f"compare {len(jobs)} blocks of {source} ...", flush=True)
        for job, row in zip(jobs, run_workers(worker, jobs, env, isolated=False), strict=True):
            row.setdefault("status", row.get("category", "harness-error"))
            row["key"] = key(job)
            with lock, store.open("a") as sink:
                sink.write(json.dumps(row, default=str) + "\n")
                known[row["key"]] = row

    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(one_source, [s for s in SOURCES if s in only]))
    return [known[key(r)] for r in validated if passed(r) and key(r) in known]


def passed(row: dict) -> bool:
    return bool(
        row.get("stage_reached") in {"forward", "backward"}
        and row.get("recipe")
        and row.get("file")
    )


# --------------------------------------------------------------------------- report


def summarize(validated: list[dict], compared: list[dict]) -> dict[str, Any]:
    by_id = {r["id"]: r for r in compared}
    summary: dict[str, Any] = {}
    for source in SOURCES:
        mine = [r for r in validated if r.get("source") == source or r["id"].startswith(source)]
        statuses: collections.Counter[str] = collections.Counter()
        for row in mine:
            if row.get("failed_stage") == "harness":
                statuses["not validated (run stopped before it)"] += 1
            elif not passed(row):
                statuses["not comparable: no passing recipe"] += 1
            else:
                statuses[by_id.get(row["id"], {}).get("status", "not run")] += 1
        rows = [by_id[r["id"]] for r in mine if r["id"] in by_id]
        summary[source] = {
            "sampled": len(mine),
            "validated": sum(r.get("failed_stage") != "harness" for r in mine),
            "reached_forward": sum(passed(r) for r in mine),
            "compared": sum(r["status"] in COMPARABLE for r in rows),
            "identical": sum(r["status"] == "identical" for r in rows),
            "identical_exact": sum(r["status"] == "identical" and r.get("exact") for r in rows),
            "different": sum(r["status"] == "DIFFERENT" for r in rows),
            "statuses": dict(statuses.most_common()),
        }
    totals = collections.Counter()
    for s in summary.values():
        for key in ("sampled", "validated", "reached_forward", "compared"):
            totals[key] += s[key]
        totals["identical"] += s["identical"]
        totals["different"] += s["different"]
    summary["total"] = dict(totals)
    return summary


def failure_groups(validated: list[dict]) -> dict[str, dict[str, Any]]:
    """Why sampled blocks have no passing recipe: ``stage:category`` with examples."""
    groups: dict[str, dict[str, Any]] = {}
    for row in validated:
        if passed(row) or row.get("failed_stage") == "harness":
            continue
        key = f"{row.get('failed_stage')}:{row.get('category')}"
        bucket = groups.setdefault(key, {"count": 0, "examples": []})
        bucket["count"] += 1
        if len(bucket["examples"]) < 2:
            bucket["examples"].append(f"{row['id']}: {row.get('message', '')}"[:240])
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]["count"]))


def markdown(result: dict[str, Any]) -> str:
    summary = result["summary"]
    total = summary["total"]
    lines = [
        "# Extracted blocks identical to their originals (issue #12)",
        "",
        f"Command: `{result['command']}`  ",
        f"Sample: {result['sample']}  ",
        f"Machine: 2 cores shared with other helpers' jobs; load average (1, 5, 15 min) "
        f"{result['load']['start']} at the start, {result['load']['after_validate']} after "
        f"validation, {result['load']['end']} at the end. Wall: validate "
        f"{result['seconds']['validate']} s, compare {result['seconds']['compare']} s.",
        "",
        "Each block: validated by nnrag (`Workspace.validate`, depth forward: extraction, "
        "sandbox, probe); a block that reaches forward is rebuilt from its recorded recipe "
        "beside the original class imported from its unpacked release, same seeds; "
        "state_dict keys, shapes, dtypes, values and forward outputs compared exactly "
        "(values equal only within rtol 1e-6 / atol 1e-7 would count as identical and be "
        "listed as inexact). The original runs twice; if it disagrees with itself it is not "
        "comparable.",
        "",
        f"**Compared {total['compared']} blocks: {total['identical']} identical, "
        f"{total['different']} different** (of {total['sampled']} sampled, "
        f"{total['validated']} validated, {total['reached_forward']} with a passing recipe).",
        "",
        "| source | sampled | validated | passing recipe | compared | identical (exact) | "
        "different | not compared (why) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for source in SOURCES:
        s = summary[source]
        why = ", ".join(
            f"{k}: {v}" for k, v in s["statuses"].items() if k not in ("identical", "DIFFERENT")
        )
        lines.append(
            f"| {source} ({RELEASES[source]}) | {s['sampled']} | {s['validated']} | "
            f"{s['reached_forward']} | "
            f"{s['compared']} | {s['identical']} ({s['identical_exact']}) | {s['different']} | "
            f"{why or '-'} |"
        )
    lines += ["", "Stand-ins so the installed originals import in this environment:", ""]
    lines += [f"- {text}" for text in STAND_INS]
    different = [r for r in result["compared"] if r["status"] == "DIFFERENT"]
    lines += ["", "## Differences", ""]
    lines += [f"- `{r['id']}`: {r['message']}" for r in different] or ["none"]
    inexact = [r for r in result["compared"] if r["status"] == "identical" and not r.get("exact")]
    if inexact:
        lines += ["", "## Identical within tolerance only", ""]
        lines += [f"- `{r['id']}`: {'; '.join(r['inexact'][:3])}" for r in inexact]
    lines += ["", "## Not comparable after a passing recipe (examples)", ""]
    if all(r["status"] in COMPARABLE for r in result["compared"]):
        lines.append("none")
    seen: collections.Counter[str] = collections.Counter()
    for row in result["compared"]:
        if row["status"] in COMPARABLE or seen[row["status"]] >= 3:
            continue
        seen[row["status"]] += 1
        lines.append(f"- {row['status']}: `{row['id']}`: {row.get('message', '')}"[:400])
    lines += ["", "## No passing recipe (stage:category, examples)", ""]
    for key, bucket in result["no_recipe"].items():
        lines.append(
            f"- **{key}** ({bucket['count']}): " + " | ".join(f"`{e}`" for e in bucket["examples"])
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- driver


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/nnrag-identical", help="cache and files")
    parser.add_argument("--per-source", type=int, help="an even sample of N blocks per source")
    parser.add_argument("--shards", type=int, default=2, help="validation processes")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per comparison")
    parser.add_argument("--parallel", type=int, default=2, help="comparison workers at once")
    parser.add_argument(
        "--retry-not-comparable", action="store_true", help="recompare stored failures too"
    )
    parser.add_argument("--sources", help="compare only these sources (comma-separated keys)")
    parser.add_argument("--skip-validate", action="store_true", help="reuse validated*.jsonl")
    parser.add_argument("--validate-shard", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--results-name", default="identical_bench")
    args = parser.parse_args(argv)
    if args.validate_shard:
        repos, cache, ids, out = args.validate_shard
        validate_shard(Path(repos), Path(cache), json.loads(Path(ids).read_text()), Path(out))
        return 0

    work = Path(args.work)
    load = {"start": [round(x, 2) for x in os.getloadavg()]}
    repos, info = assemble(work)
    cache = work / "cache"
    started = time.monotonic()
    ids, discovered = sampled(repos, cache, work, args.per_source, reuse=args.skip_validate)
    print(f"{len(ids)} blocks sampled of {sum(discovered.values())}", flush=True)
    if args.skip_validate:
        validated = read_validated(work, ids)
    else:
        validated = validate_all(repos, cache, ids, args.shards, work)
    validate_s = round(time.monotonic() - started, 1)
    load["after_validate"] = [round(x, 2) for x in os.getloadavg()]
    started = time.monotonic()
    only = set(args.sources.split(",")) if args.sources else set(SOURCES)
    compared = compare_all(
        validated, args.timeout, work, args.parallel, only, retry=args.retry_not_comparable
    )
    compare_s = round(time.monotonic() - started, 1)
    load["end"] = [round(x, 2) for x in os.getloadavg()]
    command = "PYTHONPATH=$PWD nice /work/benchenv/bin/python benchmarks/identical_bench.py " + (
        " ".join(argv if argv is not None else sys.argv[1:])
    )
    result = {
        "command": command.strip(),
        "sample": (
            f"an even sample of at most {args.per_source} blocks per source in id order"
            if args.per_source
            else "every discovered block"
        )
        + (f", then {extended}" if (extended := sample_note(work)) else "")
        + f" ({len(ids)} of {sum(discovered.values())} discovered: {dict(discovered)}); "
        f"validated: {sum(r.get('failed_stage') != 'harness' for r in validated)}",
        "sources": info,
        "load": load,
        "seconds": {"validate": validate_s, "compare": compare_s},
        "summary": summarize(validated, compared),
        "no_recipe": failure_groups(validated),
        "compared": [{k: v for k, v in r.items() if k != "key"} for r in compared],
        "validated": [
            {k: v for k, v in r.items() if k not in ("dependencies", "recipe")} for r in validated
        ],
    }
    RESULTS.mkdir(exist_ok=True)
    name = args.results_name
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown(result))
    print(json.dumps(result["summary"], indent=1))
    return 0


def sampled(
    repos: Path, cache: Path, work: Path, per_source: int | None, *, reuse: bool
) -> tuple[list[str], dict[str, int]]:
    """The sampled block ids and the blocks discovered per source (``work/sample.json``:
    written by a run, read back by ``--skip-validate``)."""
    record = work / "sample.json"
    if reuse and record.exists():
        data = json.loads(record.read_text())
        return list(data["ids"]), dict(data["discovered"])
    ws = workspace(repos, cache)
    ws.build()
    blocks = list(ws.blocks())
    ws.close()
    ids = [b.id for b in sample(blocks, per_source)]
    discovered = dict(collections.Counter(b.source for b in blocks))
    record.write_text(json.dumps({"ids": ids, "discovered": discovered}))
    return ids, discovered


def sample_note(work: Path) -> str:
    """How the sample was extended after the first run (``extended`` in sample.json)."""
    record = work / "sample.json"
    return str(json.loads(record.read_text()).get("extended", "")) if record.exists() else ""


def read_validated(work: Path, ids: list[str]) -> list[dict]:
    rows = {}
    for out in sorted(work.glob("validated*.jsonl")):
        for line in out.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["id"]] = row
    return [
        rows.get(i, {"id": i, "failed_stage": "harness", "message": "not validated"}) for i in ids
    ]


if __name__ == "__main__":
    sys.exit(main())
