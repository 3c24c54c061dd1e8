"""The ``nnrag`` command line: argument parsing and printing over library calls."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnrag import __version__
from nnrag.errors import NnragError
from nnrag.model import STAGES, Stage, ValidationResult
from nnrag.report import diagnostic_json, format_diagnostic, verdict_line

if TYPE_CHECKING:
    from nnrag.model import Diagnostic, Settings

Handler = Callable[[argparse.Namespace], int]


def _add_repos_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repos",
        metavar="FILE",
        help="repos.json to read (default: ./repos.json, or $NNRAG_REPOS)",
    )
    parser.add_argument(
        "--cache",
        metavar="DIR",
        help="cache folder for checkouts, the index and results (default: $NNRAG_CACHE_DIR, "
        "else the user cache dir)",
    )


def _sources(args: argparse.Namespace, **overrides: Any) -> Settings:
    """Settings of a command that needs sources; none configured is a ConfigError (exit 2).

    Says on stderr which config it reads when that is not the one the cache's index was
    last built from (a different ``--repos``, $NNRAG_REPOS or ./repos.json).
    """
    from nnrag.config import DEFAULT_REPOS_FILE, REPOS_ENV, load_settings
    from nnrag.errors import ConfigError

    settings = load_settings(args.repos, cache_dir=args.cache, **overrides)
    if settings.repos_file is None:
        raise ConfigError(
            f"no sources configured: no --repos FILE, no ${REPOS_ENV} and no "
            f"./{DEFAULT_REPOS_FILE} in {Path.cwd()}; pass --repos FILE "
            "(examples/repos.json shows the format)"
        )
    if not settings.sources:
        raise ConfigError(
            "names no source; add one (examples/repos.json shows the format)",
            file=settings.repos_file,
        )
    marker = settings.cache_dir / "last-config"
    try:
        last = marker.read_text(encoding="utf-8").strip()
    except OSError:
        last = ""
    if last != str(settings.repos_file):
        if last:
            print(
                f"nnrag {args.command}: reading {settings.repos_file}; the index in "
                f"{settings.cache_dir} was last built from {last}",
                file=sys.stderr,
            )
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{settings.repos_file}\n", encoding="utf-8")
        except OSError:
            pass  # a read-only cache still serves; the note is only a courtesy
    return settings


def _category(text: str) -> str:
    """``--category``: a block category, checked when the command line is parsed."""
    from nnrag.retrieve.categorize import BLOCK_CATEGORIES

    if text not in BLOCK_CATEGORIES:
        allowed = ", ".join(repr(name) for name in BLOCK_CATEGORIES)
        raise argparse.ArgumentTypeError(f"unknown category {text!r}; use one of: {allowed}")
    return text


def _not_built(name: str) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        print(f"nnrag {name}: not available in this build", file=sys.stderr)
        return 2

    return handler


def _cmd_index(args: argparse.Namespace) -> int:
    """``nnrag index``: exit 1 only if a source could not be materialized."""
    import json

    from nnrag.workspace import Workspace

    settings = _sources(args)
    workspace = Workspace(settings)
    stats = workspace.build(progress=sys.stderr.isatty() and not args.json)
    checkouts = workspace.index().checkouts if stats.problems else {}
    roots = {name: c.root for name, c in checkouts.items()}
    located = [
        (str(roots[p.source] / p.path) if p.source in roots else f"{p.source}:{p.path}", p)
        for p in stats.problems
    ]
    if args.json:
        summary = {
            "sources": stats.sources,
            "files": stats.files,
            "modules": stats.modules,
            "blocks": stats.blocks,
            "parsed": stats.parsed,
            "lines": stats.lines,
            "seconds": round(stats.seconds, 3),
            "cache": str(settings.cache_dir),
            "problems": [
                {
                    "source": p.source,
                    "path": where,
                    "line": p.line,
                    "col": p.col,
                    "code": p.code,
                    "message": p.message,
                }
                for where, p in located
            ],
            "source_errors": list(stats.source_errors),
            "warnings": list(stats.warnings),
        }
        print(json.dumps(summary, indent=2))
    else:
        for where, problem in located:
            print(format_diagnostic(problem, path=where))
        for message in stats.source_errors:
            print(f"nnrag index: error: {message}", file=sys.stderr)
        for message in stats.warnings:
            print(f"nnrag index: warning: {message}", file=sys.stderr)
        print(
            f"nnrag index: {stats.sources} of {len(settings.sources)} sources, "
            f"{stats.files} files ({stats.parsed} parsed), {stats.modules} modules, "
            f"{stats.blocks} blocks, {len(stats.problems)} file problems, "
            f"{stats.seconds:.2f} s",
            file=sys.stderr,
        )
    return 1 if stats.source_errors else 0


def _cmd_list(args: argparse.Namespace) -> int:
    """``nnrag list [PATTERN] [--category C]``: discovered block ids and categories, sorted."""
    import fnmatch
    import json

    from nnrag.workspace import Workspace

    workspace = Workspace(_sources(args))
    blocks = workspace.blocks()
    if args.pattern:
        blocks = tuple(
            b
            for b in blocks
            if fnmatch.fnmatchcase(b.id, args.pattern) or fnmatch.fnmatchcase(b.name, args.pattern)
        )
    listed = [(b, workspace.category(b)) for b in blocks]
    if args.category is not None:
        listed = [(b, category) for b, category in listed if category == args.category]
    if args.json:
        rows = [
            {
                "id": b.id,
                "category": category,
                "source": b.source,
                "module": b.module,
                "name": b.name,
                "path": b.path,
                "line": b.line,
            }
            for b, category in listed
        ]
        print(json.dumps(rows, indent=2))
    else:
        width = max((len(b.id) for b, _ in listed), default=0)
        for block, category in listed:
            print(f"{block.id.ljust(width)}  {category}")
    return 0


def _cmd_extract(args: argparse.Namespace) -> int:
    if args.into:
        return _extract_into(args)  # vendoring (owner: vendor): nnrag.vendor.vendor_blocks
    return _extract_files(args)


def _extract_files(args: argparse.Namespace) -> int:
    """``nnrag extract ID|NAME... [--out DIR] [--all]``: exit 0 only if every block closed."""
    import json
    from pathlib import Path

    from nnrag.errors import BlockNotFoundError, ExtractionError, InternalError
    from nnrag.extract.block import spec_path, write_block
    from nnrag.model import BlockRef
    from nnrag.workspace import Workspace

    if not args.blocks and not args.all:
        print("nnrag extract: give block ids or class names, or --all", file=sys.stderr)
        return 2
    workspace = Workspace(_sources(args))
    blocks: list[BlockRef] = list(workspace.blocks()) if args.all else []
    lookup_errors = []
    for query in [] if args.all else args.blocks:
        try:
            blocks.append(workspace.find(query))
        except BlockNotFoundError as error:
            lookup_errors.append(str(error))
    if lookup_errors:
        for message in lookup_errors:
            print(f"nnrag extract: error: {message}", file=sys.stderr)
        return 2
    blocks = list({block.id: block for block in blocks}.values())
    names = [block.name for block in blocks]
    out = Path(args.out)
    rows: list[dict[str, object]] = []
    iterator: Iterable[BlockRef] = blocks
    if args.all and not args.json and sys.stderr.isatty():
        from tqdm import tqdm

        iterator = tqdm(blocks, desc="extract", unit="block")
    failed = 0
    for block in iterator:
        row: dict[str, object] = {"id": block.id}
        try:
            extracted = workspace.extract(block)
        except (ExtractionError, InternalError) as error:
            failed += 1
            row.update(closed=False, error=str(error))
            rows.append(row)
            if not args.json:
                print(f"{block.id}: error: {error}", file=sys.stderr)
            continue
        # two requested blocks with one class name: each goes into a folder named for its module
        folder = out / block.module if names.count(block.name) > 1 else out
        path = write_block(extracted, folder, category=workspace.category(block))
        failed += not extracted.closed
        row.update(
            file=str(path),
            spec=str(spec_path(path)),
            closed=extracted.closed,
            digest=extracted.digest,
            requirements=list(extracted.requirements),
            problems=[diagnostic_json(p) for p in extracted.problems],
        )
        rows.append(row)
        if not args.json:
            _print_extracted(block.id, path, extracted.problems)
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    elif len(blocks) > 1:
        print(f"{len(blocks) - failed} of {len(blocks)} blocks closed; files in {out}")
    return 1 if failed else 0


def _print_extracted(block_id: str, path: object, problems: Sequence[Diagnostic]) -> None:
    """One line per block; problems grouped by category, each with its dependency path."""
    if not problems:
        print(f"{block_id}: closed -> {path}")
        return
    print(f"{block_id}: NOT closed ({len(problems)} problems) -> {path}")
    groups: dict[str, list[Diagnostic]] = {}
    for problem in problems:
        groups.setdefault(problem.category, []).append(problem)
    for category in sorted(groups):
        print(f"  {category} ({len(groups[category])}):")
        for problem in groups[category]:
            print(f"    {format_diagnostic(problem)}")


def _cmd_validate(args: argparse.Namespace) -> int:
    """``nnrag validate ID|NAME... [--all] [--executor ray]``: exit 1 if any block fails."""
    import json

    from nnrag.errors import ConfigError
    from nnrag.model import RayOptions
    from nnrag.validate.executors import make_executor, validate_many
    from nnrag.validate.results import result_to_dict
    from nnrag.workspace import Workspace

    if args.executor != "ray" and (args.ray_address or args.ray_cpus_per_actor is not None):
        raise ConfigError(
            "--ray-address and --ray-cpus-per-actor need --executor ray", key="executor"
        )
    if args.ray_cpus_per_actor is not None and args.ray_cpus_per_actor <= 0:
        raise ConfigError("--ray-cpus-per-actor must be a positive number of CPUs", key="executor")
    settings = _sources(
        args,
        depth=args.depth,
        timeout_s=args.timeout,
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
            _harvest_first(workspace, blocks, executor)
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
    if args.json:
        print(json.dumps([result_to_dict(r) for r in results], indent=2, default=repr))
    else:
        passed = sum(r.passed for r in results)
        layers = workspace.sandbox_layers()
        if layers is not None:
            from nnrag.validate.sandbox import describe_layers

            print(describe_layers(layers), file=sys.stderr)
        print(f"nnrag validate: {passed} of {len(results)} passed", file=sys.stderr)
    kinds = (
        {block.id: workspace.category(block) for block in blocks}
        if args.report or args.badge
        else None
    )
    _write_run_report(
        results, settings.depth, report=args.report, badge=args.badge, block_categories=kinds
    )
    return 0 if all(r.passed for r in results) else 1


def _harvest_first(workspace: Any, blocks: list[Any], executor: Any) -> None:
    """``--all``: a harvest pass over every block first (results cached, nothing printed),
    so each block's verdict afterwards uses the complete harvest, whatever the order."""
    from nnrag.validate.executors import validate_many
    from nnrag.validate.stages import complete_harvests

    state = workspace.extraction_state()
    results = workspace.results()
    if all(results.harvest_complete(source, state) for source in {b.source for b in blocks}):
        return
    for _ in validate_many(workspace, blocks, executor=executor):
        pass
    complete_harvests(workspace, [b.id for b in blocks])


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
) -> None:
    """``--report`` / ``--badge``: the same JSON report and badge as the pytest plugin."""
    if report is None and badge is None:
        return
    from pathlib import Path

    from nnrag.report import build_report, write_badge, write_report

    document = build_report(results, depth=depth, block_categories=block_categories)
    written = [write_report(document, Path(report))] if report is not None else []
    if badge is not None:
        written.extend(write_badge(document, Path(badge)))
    for path in written:
        print(f"nnrag validate: wrote {path}", file=sys.stderr)


def _cmd_search(args: argparse.Namespace) -> int:
    """``nnrag search QUERY``: bm25-ranked blocks (the search table is updated first)."""
    import json
    from dataclasses import asdict

    from nnrag.retrieve.search import search
    from nnrag.workspace import Workspace

    workspace = Workspace(_sources(args))
    hits = search(
        workspace.index(),
        workspace.blocks(),
        args.query,
        cache_dir=workspace.settings.cache_dir,
        source=args.source,
        category=args.category,
        limit=args.limit,
    )
    if args.json:
        print(json.dumps([asdict(hit) for hit in hits], indent=2))
        return 0
    if not hits:
        print(f"no block matches {args.query!r}", file=sys.stderr)
        return 1
    for hit in hits:
        print(f"{hit.id}  [{hit.category}]")
        if hit.summary:
            print(f"    {hit.summary}")
        print(f"    {hit.path}:{hit.line}")
    return 0


def _cmd_dedup(args: argparse.Namespace) -> int:
    """``nnrag dedup``: unique blocks after exact, lexical and structural de-duplication."""
    import json

    from nnrag.model import BlockRef
    from nnrag.retrieve.dedup import (
        DedupParams,
        dedup_blocks,
        dedup_json,
        format_report,
        resolved_closure_code,
    )
    from nnrag.workspace import Workspace

    if not 0.0 < args.threshold <= 1.0:
        print("nnrag dedup: error: --threshold must be in (0, 1]", file=sys.stderr)
        return 2
    workspace = Workspace(_sources(args))
    index, blocks = workspace.index(), workspace.blocks()
    closure_code = None
    bar = None
    if not args.target_only:
        resolved = resolved_closure_code(index)
        if sys.stderr.isatty():  # a bar once resolving the closures takes more than a second
            from tqdm import tqdm

            bar = tqdm(total=len(blocks), desc="nnrag dedup", unit="block", delay=1.0, leave=False)

        def closure_code(block: BlockRef) -> list[str] | None:
            parts = resolved(block)
            if bar is not None:
                bar.update(1)
            return parts

    try:
        report = dedup_blocks(
            index,
            blocks,
            closure_code=closure_code,
            params=DedupParams(
                lexical_threshold=args.threshold, structural_threshold=args.threshold
            ),
        )
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps(dedup_json(report), indent=2))
    else:
        print(format_report(report))
    return 0


def _extract_into(args: argparse.Namespace) -> int:
    """``nnrag extract ID... --into DIR``: vendor blocks with their manifest."""
    import json
    from pathlib import Path

    from nnrag.errors import BlockNotFoundError
    from nnrag.vendor import vendor_blocks
    from nnrag.workspace import Workspace

    workspace = Workspace(_sources(args))
    queries = [block.id for block in workspace.blocks()] if args.all else list(args.blocks)
    if not queries:
        print("nnrag extract: give block ids or names, or --all", file=sys.stderr)
        return 2
    lookup_errors = []
    for query in [] if args.all else queries:
        try:
            workspace.find(query)
        except BlockNotFoundError as error:
            lookup_errors.append(str(error))
    if lookup_errors:  # as for `nnrag extract` and `validate`: name the candidates, exit 2
        for message in lookup_errors:
            print(f"nnrag extract: error: {message}", file=sys.stderr)
        return 2
    outcomes = vendor_blocks(workspace, queries, Path(args.into), force=args.force)
    if args.json:
        rows = [
            {
                "id": o.block_id,
                "file": str(o.file) if o.file else None,
                "action": o.action,
                "reason": o.reason,
                "problems": [format_diagnostic(p) for p in o.problems],
            }
            for o in outcomes
        ]
        print(json.dumps(rows, indent=2))
    else:
        for outcome in outcomes:
            print(outcome.format())
    return 1 if any(o.action in ("skipped", "failed") for o in outcomes) else 0


def _cmd_refresh(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nnrag.config import load_settings
    from nnrag.vendor import refresh

    cache = load_settings(None, cache_dir=args.cache, environ=None).cache_dir
    outcomes = refresh(Path(args.dir), cache_dir=cache, force=args.force)
    for outcome in outcomes:
        print(outcome.format())
        if outcome.diff:
            print(outcome.diff.rstrip("\n"))
    counts = {
        action: sum(o.action == action for o in outcomes)
        for action in ("updated", "merged", "unchanged", "skipped", "failed")
    }
    print(
        "nnrag refresh: " + ", ".join(f"{n} {action}" for action, n in counts.items()),
        file=sys.stderr,
    )
    return 1 if counts["failed"] else 0


def _cmd_vendor(args: argparse.Namespace) -> int:
    """``nnrag vendor --rewrite-imports SRC...`` (see :mod:`nnrag.vendoring.commands`)."""
    from nnrag.vendoring.commands import vendor_command

    return vendor_command(args)


def build_parser() -> argparse.ArgumentParser:
    """The ``nnrag`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="nnrag",
        description="Dependency-closed, validated nn.Module blocks from PyTorch repositories.",
    )
    parser.add_argument("--version", action="version", version=f"nnrag {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    index = commands.add_parser("index", help="build or update the index of every source")
    _add_repos_options(index)
    index.add_argument("--json", action="store_true", help="print the summary as JSON")
    index.set_defaults(handler=_cmd_index)

    listing = commands.add_parser("list", help="list discovered block ids, sorted")
    _add_repos_options(listing)
    listing.add_argument("pattern", nargs="?", help="fnmatch pattern on block ids")
    listing.add_argument(
        "--category", type=_category, help="only blocks of this category (e.g. attention)"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_cmd_list)

    extract = commands.add_parser("extract", help="write standalone block files")
    _add_repos_options(extract)
    extract.add_argument("blocks", nargs="*", metavar="ID|NAME", help="block ids or class names")
    extract.add_argument("--all", action="store_true", help="extract every discovered block")
    extract.add_argument("--out", metavar="DIR", default=".", help="folder to write to")
    extract.add_argument(
        "--into", metavar="DIR", help="vendor into DIR: block, spec and nnrag-blocks.json manifest"
    )
    extract.add_argument("--force", action="store_true", help="overwrite hand-edited files")
    extract.add_argument("--json", action="store_true", help="print JSON")
    extract.set_defaults(handler=_cmd_extract)

    validate = commands.add_parser("validate", help="validate blocks in the sandbox")
    _add_repos_options(validate)
    validate.add_argument("blocks", nargs="*", metavar="ID|NAME", help="block ids or class names")
    validate.add_argument("--all", action="store_true", help="validate every discovered block")
    validate.add_argument("--depth", choices=STAGES, default="forward", help="last stage to run")
    validate.add_argument("--timeout", type=float, default=60.0, metavar="S", help="per block")
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
    _add_repos_options(replay)
    replay.add_argument("blocks", nargs="*", metavar="ID|NAME", help="block ids or class names")
    replay.add_argument("--all", action="store_true", help="replay every discovered block")
    replay.add_argument("--passed", action="store_true", help="only blocks that passed")
    replay.add_argument("--timeout", type=float, default=60.0, metavar="S", help="per block")
    replay.add_argument("--json", action="store_true", help="print JSON")
    replay.set_defaults(handler=_cmd_replay)

    search = commands.add_parser("search", help="full-text search over blocks")
    _add_repos_options(search)
    search.add_argument("query", help="words to look for")
    search.add_argument("--source", help="only blocks of this source")
    search.add_argument("--category", type=_category, help="only blocks of this category")
    search.add_argument("--limit", type=int, default=10, help="at most N results")
    search.add_argument("--json", action="store_true", help="print JSON")
    search.set_defaults(handler=_cmd_search)

    dedup = commands.add_parser("dedup", help="uniqueness report: exact, lexical, structural")
    _add_repos_options(dedup)
    dedup.add_argument("--json", action="store_true", help="print JSON")
    dedup.add_argument("--threshold", type=float, default=0.9, help="Jaccard threshold")
    dedup.add_argument(
        "--target-only", action="store_true", help="only the target classes, not the closures"
    )
    dedup.set_defaults(handler=_cmd_dedup)

    from nnrag.cli_check import add_check_command

    add_check_command(commands)

    vendor = commands.add_parser(
        "vendor", help="rewrite your imports of vendored blocks to the vendored folder"
    )
    vendor.add_argument(
        "--rewrite-imports",
        nargs="+",
        metavar="SRC_DIR",
        help="your code (folders or files) whose imports of vendored classes to rewrite",
    )
    vendor.add_argument(
        "--blocks", metavar="DIR", help="the vendored folder (default: the one nnrag-blocks.json)"
    )
    vendor.add_argument(
        "--module", metavar="NAME", help="its import name (default: its path from here, dotted)"
    )
    vendor.add_argument(
        "--check", action="store_true", help="print the diff, write nothing; exit 1 if any"
    )
    vendor.add_argument("--cache", metavar="DIR", help="cache folder (the sources' index)")
    vendor.set_defaults(handler=_cmd_vendor)

    refresh = commands.add_parser("refresh", help="re-extract vendored blocks from provenance")
    refresh.add_argument("dir", nargs="?", default=".", metavar="DIR")
    refresh.add_argument("--cache", metavar="DIR", help="cache folder")
    refresh.add_argument("--force", action="store_true", help="overwrite hand-edited files too")
    refresh.set_defaults(handler=_cmd_refresh)

    from nnrag.cli_runs import add_run_commands

    add_run_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nnrag`` console script."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except NnragError as error:
        print(f"nnrag {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nnrag: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
