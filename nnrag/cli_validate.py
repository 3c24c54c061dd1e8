"""``nnrag validate`` and ``nnrag replay``: running blocks in the sandbox, locally or on Ray."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from nnrag.cli_common import add_repos_options, sources
from nnrag.model import SEARCH_CPU_S, STAGES
from nnrag.report import verdict_line

if TYPE_CHECKING:
    from nnrag.model import BlockRef, Stage, ValidationResult
    from nnrag.workspace import Workspace


def add_validate_commands(commands: Any) -> None:
    """Add ``validate`` and ``replay`` to the ``nnrag`` subcommands."""
    validate = commands.add_parser("validate", help="validate blocks in the sandbox")
    add_repos_options(validate)
    validate.add_argument("blocks", nargs="*", metavar="ID|NAME", help="block ids or class names")
    validate.add_argument("--all", action="store_true", help="validate every discovered block")
    validate.add_argument("--depth", choices=STAGES, default="forward", help="last stage to run")
    validate.add_argument("--timeout", type=float, default=60.0, metavar="S", help="per block")
    validate.add_argument(
        "--search-budget",
        type=float,
        default=SEARCH_CPU_S,
        metavar="S",
        help="CPU seconds per block for the search of constructor arguments and inputs "
        f"(default: {SEARCH_CPU_S:g}; --timeout stays the wall-clock limit)",
    )
    validate.add_argument("--revalidate", action="store_true", help="ignore cached results")
    validate.add_argument(
        "--sandbox",
        choices=("default", "strict"),
        default="default",
        help="strict: refuse to run blocks unless namespaces, seccomp and Landlock are all active",
    )
    validate.add_argument("--json", action="store_true", help="print JSON")
    validate.add_argument("--report", metavar="PATH", help="write the JSON run report")
    validate.add_argument(
        "--badge", metavar="PATH", help="write an SVG badge (+ shields JSON beside it)"
    )
    validate.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where the sandbox runs: this machine (default), or actors of a Ray cluster "
        "(needs nnrag[ray]); the cache and the report are the same",
    )
    validate.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="Ray cluster to join, e.g. HOST:6379 (default: $RAY_ADDRESS, else a local instance)",
    )
    validate.add_argument(
        "--ray-cpus-per-actor",
        type=float,
        metavar="N",
        help="CPUs each Ray actor (one warm sandbox) reserves (default 1)",
    )
    validate.set_defaults(handler=_cmd_validate)

    replay = commands.add_parser(
        "replay", help="rebuild and rerun blocks from their recorded recipes"
    )
    add_repos_options(replay)
    replay.add_argument("blocks", nargs="*", metavar="ID|NAME", help="block ids or class names")
    replay.add_argument("--all", action="store_true", help="replay every discovered block")
    replay.add_argument("--passed", action="store_true", help="only blocks that passed")
    replay.add_argument("--timeout", type=float, default=60.0, metavar="S", help="per block")
    replay.add_argument("--json", action="store_true", help="print JSON")
    replay.set_defaults(handler=_cmd_replay)


def _cmd_validate(args: argparse.Namespace) -> int:
    """``nnrag validate ID|NAME... [--all] [--executor ray]``: exit 1 if any block fails."""
    import json

    from nnrag.baseline import unfetched_counts
    from nnrag.errors import ConfigError
    from nnrag.validate.results import result_to_dict
    from nnrag.workspace import Workspace

    _check_executor_options(args)
    settings = sources(
        args,
        depth=args.depth,
        timeout_s=args.timeout,
        search_cpu_s=args.search_budget,
        revalidate=args.revalidate,
        sandbox=args.sandbox,
    )
    workspace = Workspace(settings)
    if args.all:
        blocks = list(workspace.blocks())
    elif args.blocks:
        blocks = [workspace.find(query) for query in args.blocks]
    else:
        raise ConfigError("name blocks to validate (ID or class name), or pass --all", key="blocks")
    results = _validate_blocks(args, workspace, blocks)
    # --all covers the configuration: a source that could not be fetched counts as failed
    unfetched = unfetched_counts(workspace.unfetched(), None) if args.all else {}
    if args.json:
        print(json.dumps([result_to_dict(r) for r in results], indent=2, default=repr))
    else:
        _print_summary(workspace, results, unfetched)
    kinds = (
        {block.id: workspace.category(block) for block in blocks}
        if args.report or args.badge
        else None
    )
    _write_run_report(
        results,
        settings.depth,
        report=args.report,
        badge=args.badge,
        block_categories=kinds,
        unfetched=unfetched,
    )
    return 0 if all(r.passed for r in results) and not unfetched else 1


def _check_executor_options(args: argparse.Namespace) -> None:
    """The Ray options make sense only with ``--executor ray`` and a positive CPU count."""
    from nnrag.errors import ConfigError

    if args.executor != "ray" and (args.ray_address or args.ray_cpus_per_actor is not None):
        raise ConfigError(
            "--ray-address and --ray-cpus-per-actor need --executor ray", key="executor"
        )
    if args.ray_cpus_per_actor is not None and args.ray_cpus_per_actor <= 0:
        raise ConfigError("--ray-cpus-per-actor must be a positive number of CPUs", key="executor")


def _validate_blocks(
    args: argparse.Namespace, workspace: Workspace, blocks: list[BlockRef]
) -> list[ValidationResult]:
    """Validate ``blocks`` on the chosen executor (a harvest pass first with ``--all``),
    one verdict line each as they come (a progress bar on a terminal); in ``blocks`` order."""
    from nnrag.model import RayOptions
    from nnrag.validate.executors import make_executor, validate_many

    options = RayOptions(address=args.ray_address, cpus_per_actor=args.ray_cpus_per_actor or 1.0)
    # Created before extraction starts: Ray actors warm their sandboxes meanwhile.
    executor = make_executor(args.executor, workspace, ray=options)
    bar = None
    if len(blocks) > 1 and not args.json and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(blocks), desc="validate", unit="block")
    say = print if bar is None else bar.write
    results = []
    try:
        if args.all:
            from nnrag.validate.harvesting import harvest_with

            harvest_with(workspace, blocks, executor)
        for result in validate_many(workspace, blocks, executor=executor):
            results.append(result)
            if bar is not None:
                bar.update()
            if not args.json:
                say(verdict_line(result))
    finally:
        if bar is not None:
            bar.close()
        executor.close()
    order = {block.id: position for position, block in enumerate(blocks)}
    results.sort(key=lambda r: order.get(r.block_id, len(order)))
    return results


def _print_summary(
    workspace: Workspace, results: list[ValidationResult], unfetched: dict[str, int]
) -> None:
    """The sandbox's layers, the sources that could not be fetched, and the pass count."""
    passed = sum(r.passed for r in results)
    layers = workspace.sandbox_layers()
    if layers is not None:
        from nnrag.validate.sandbox import describe_layers

        print(describe_layers(layers), file=sys.stderr)
    for name, why in workspace.unfetched().items() if unfetched else ():
        print(f"nnrag validate: {why}; counted as {unfetched[name]} failed", file=sys.stderr)
    items = len(results) + sum(unfetched.values())
    print(f"nnrag validate: {passed} of {items} passed", file=sys.stderr)


def _cmd_replay(args: argparse.Namespace) -> int:
    """``nnrag replay ID|NAME... [--all]``: exit 1 if any recipe does not reproduce its outcome."""
    import json

    from nnrag.config import load_settings
    from nnrag.errors import ConfigError
    from nnrag.validate.results import result_to_dict
    from nnrag.workspace import Workspace

    settings = load_settings(args.repos, cache_dir=args.cache, timeout_s=args.timeout)
    workspace = Workspace(settings)
    if args.all:
        blocks = list(workspace.blocks())
    elif args.blocks:
        blocks = [workspace.find(query) for query in args.blocks]
    else:
        raise ConfigError("name blocks to replay (ID or class name), or pass --all", key="blocks")
    replays = []
    for block in blocks:
        replay = workspace.replay(block)
        if args.passed and not replay.recorded.passed:
            continue
        replays.append(replay)
        if args.json:
            continue
        outcome = replay.recorded
        verdict = "pass" if outcome.passed else f"{outcome.failed_stage} [{outcome.category}]"
        if replay.reproduced:
            print(f"REPRODUCED {replay.block_id} ({verdict})", flush=True)
        else:
            print(f"DIFFERS {replay.block_id} ({verdict}): {'; '.join(replay.differences)}")
    if args.json:
        document = [
            {
                "block_id": r.block_id,
                "reproduced": r.reproduced,
                "differences": list(r.differences),
                "recorded": result_to_dict(r.recorded),
                "replayed": result_to_dict(r.replayed),
            }
            for r in replays
        ]
        print(json.dumps(document, indent=2, default=repr))
    same = sum(r.reproduced for r in replays)
    print(f"nnrag replay: {same} of {len(replays)} reproduced", file=sys.stderr)
    return 0 if same == len(replays) else 1


def _write_run_report(
    results: list[ValidationResult],
    depth: Stage,
    *,
    report: str | None,
    badge: str | None,
    block_categories: dict[str, str] | None = None,
    unfetched: dict[str, int] | None = None,
) -> None:
    """``--report`` / ``--badge``: the same JSON report and badge as the pytest plugin
    (``unfetched``: failed items per source that could not be fetched)."""
    if report is None and badge is None:
        return
    from pathlib import Path

    from nnrag.badge import write_badge
    from nnrag.report import build_report, write_report

    document = build_report(
        results, depth=depth, block_categories=block_categories, unfetched=unfetched
    )
    written = [write_report(document, Path(report))] if report is not None else []
    if badge is not None:
        written.extend(write_badge(document, Path(badge)))
    for path in written:
        print(f"nnrag validate: wrote {path}", file=sys.stderr)
