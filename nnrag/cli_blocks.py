"""``nnrag index|list|extract|search|dedup|vendor|refresh``: finding blocks and writing them out."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnrag.cli_common import add_repos_options, category_type, sources
from nnrag.report import diagnostic_json, format_diagnostic

if TYPE_CHECKING:
    from nnrag.model import BlockRef, Diagnostic


def add_index_commands(commands: Any) -> None:
    """``index``, ``list``, ``extract``."""
    index = commands.add_parser("index", help="build or update the index of every source")
    add_repos_options(index)
    index.add_argument("--json", action="store_true", help="print the summary as JSON")
    index.set_defaults(handler=_cmd_index)

    listing = commands.add_parser("list", help="list discovered block ids, sorted")
    add_repos_options(listing)
    listing.add_argument("pattern", nargs="?", help="fnmatch pattern on block ids")
    listing.add_argument(
        "--category", type=category_type, help="only blocks of this category (e.g. attention)"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_cmd_list)

    extract = commands.add_parser("extract", help="write standalone block files")
    add_repos_options(extract)
    extract.add_argument("blocks", nargs="*", metavar="ID|NAME", help="block ids or class names")
    extract.add_argument("--all", action="store_true", help="extract every discovered block")
    extract.add_argument("--out", metavar="DIR", default=".", help="folder to write to")
    extract.add_argument(
        "--into", metavar="DIR", help="vendor into DIR: block, spec and nnrag-blocks.json manifest"
    )
    extract.add_argument("--force", action="store_true", help="overwrite hand-edited files")
    extract.add_argument("--json", action="store_true", help="print JSON")
    extract.set_defaults(handler=_cmd_extract)


def add_search_commands(commands: Any) -> None:
    """``search``, ``dedup``."""
    search = commands.add_parser("search", help="full-text search over blocks")
    add_repos_options(search)
    search.add_argument("query", help="words to look for")
    search.add_argument("--source", help="only blocks of this source")
    search.add_argument("--category", type=category_type, help="only blocks of this category")
    search.add_argument("--limit", type=int, default=10, help="at most N results")
    search.add_argument("--json", action="store_true", help="print JSON")
    search.set_defaults(handler=_cmd_search)

    dedup = commands.add_parser("dedup", help="uniqueness report: exact, lexical, structural")
    add_repos_options(dedup)
    dedup.add_argument("--json", action="store_true", help="print JSON")
    dedup.add_argument("--threshold", type=float, default=0.9, help="Jaccard threshold")
    dedup.add_argument(
        "--target-only", action="store_true", help="only the target classes, not the closures"
    )
    dedup.set_defaults(handler=_cmd_dedup)


def add_vendor_commands(commands: Any) -> None:
    """``vendor``, ``refresh``."""
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


def _cmd_index(args: argparse.Namespace) -> int:
    """``nnrag index``: exit 1 only if a source could not be materialized."""
    import json

    from nnrag.workspace import Workspace

    settings = sources(args)
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

    workspace = Workspace(sources(args))
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

    from nnrag.errors import BlockNotFoundError, ExtractionError, InternalError
    from nnrag.extract.block import spec_path, write_block
    from nnrag.workspace import Workspace

    if not args.blocks and not args.all:
        print("nnrag extract: give block ids or class names, or --all", file=sys.stderr)
        return 2
    workspace = Workspace(sources(args))
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


def _extract_into(args: argparse.Namespace) -> int:
    """``nnrag extract ID... --into DIR``: vendor blocks with their manifest."""
    import json

    from nnrag.errors import BlockNotFoundError
    from nnrag.vendor import vendor_blocks
    from nnrag.workspace import Workspace

    workspace = Workspace(sources(args))
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


def _cmd_search(args: argparse.Namespace) -> int:
    """``nnrag search QUERY``: bm25-ranked blocks (the search table is updated first)."""
    import json
    from dataclasses import asdict

    from nnrag.retrieve.search import search
    from nnrag.workspace import Workspace

    workspace = Workspace(sources(args))
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
    workspace = Workspace(sources(args))
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


def _cmd_refresh(args: argparse.Namespace) -> int:

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
