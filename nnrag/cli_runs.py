"""CLI commands for CI runs: ``nnrag report merge|baseline``, ``nnrag results export|import``."""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from nnrag.errors import CacheError, ConfigError


def add_run_commands(commands: Any) -> None:
    """Add ``report`` and ``results`` to the ``nnrag`` subcommands (``add_subparsers`` result)."""
    report = commands.add_parser(
        "report", help="merge shard reports; turn a report into a baseline"
    )
    actions = report.add_subparsers(dest="action", required=True, metavar="ACTION")
    merge = actions.add_parser(
        "merge", help="merge the reports of --nnrag-shard runs into one report and badge"
    )
    merge.add_argument("reports", nargs="+", metavar="REPORT", help="shard reports (JSON)")
    merge.add_argument("--out", metavar="FILE", required=True, help="merged report to write")
    merge.add_argument("--badge", metavar="FILE", help="also write the SVG badge (+ .json)")
    merge.set_defaults(handler=_cmd_report_merge)
    baseline = actions.add_parser(
        "baseline", help="write a --nnrag-baseline file from a (merged) report"
    )
    baseline.add_argument("report", metavar="REPORT")
    baseline.add_argument("--out", metavar="FILE", required=True, help="baseline file to write")
    baseline.set_defaults(handler=_cmd_report_baseline)

    results = commands.add_parser(
        "results", help="export/import the content-addressed result cache (CI cache, artifacts)"
    )
    actions = results.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("export", "write every cached result to FILE (JSON lines; .gz compresses)"),
        ("import", "add the results in FILE to the cache (existing ones are kept)"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("file", metavar="FILE")
        sub.add_argument(
            "--cache",
            metavar="DIR",
            help="cache folder (default: $NNRAG_CACHE_DIR, else the user cache dir)",
        )
        sub.set_defaults(handler=_cmd_results_export if name == "export" else _cmd_results_import)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read: {error.strerror or error}", file=path) from None
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"malformed JSON: {error.msg}", file=path, line=error.lineno, col=error.colno
        ) from None
    if not isinstance(data, dict):
        raise ConfigError("not an nnrag report (expected a JSON object)", file=path)
    return data


def _cmd_report_merge(args: argparse.Namespace) -> int:
    """``nnrag report merge A.json B.json --out report.json [--badge badge.svg]``."""
    from nnrag.badge import write_badge
    from nnrag.report import ReportMergeError, merge_reports, summary_lines, write_report

    reports = [(name, _read_json(Path(name))) for name in args.reports]
    try:
        merged = merge_reports(reports)
    except ReportMergeError as error:
        print(f"nnrag report merge: error: {error}", file=sys.stderr)
        return 2
    written = [write_report(merged, Path(args.out))]
    if args.badge:
        written.extend(write_badge(merged, Path(args.badge)))
    for line in summary_lines(merged):
        print(line)
    for path in written:
        print(f"nnrag report merge: wrote {path}", file=sys.stderr)
    return 0


def _cmd_report_baseline(args: argparse.Namespace) -> int:
    """``nnrag report baseline REPORT --out FILE``: the report's outcomes as a baseline."""
    from nnrag.baseline import baseline_from_report, write_baseline

    baseline = baseline_from_report(_read_json(Path(args.report)))
    path = write_baseline(baseline, Path(args.out))
    failing = sum(not entry.passed for entry in baseline.blocks.values())
    print(
        f"nnrag report baseline: wrote {path} ({len(baseline.blocks)} blocks, "
        f"{failing} expected to fail, depth {baseline.depth})",
        file=sys.stderr,
    )
    return 0


def _open(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return cast(IO[str], gzip.open(path, mode + "t", encoding="utf-8"))
    return path.open(mode, encoding="utf-8")


def _cache(args: argparse.Namespace) -> Any:
    from nnrag.config import load_settings
    from nnrag.validate.results import ResultCache

    folder = load_settings(None, cache_dir=args.cache, environ=None).cache_dir
    return ResultCache(folder / "results.sqlite")


def _cmd_results_export(args: argparse.Namespace) -> int:
    path = Path(args.file)
    cache = _cache(args)
    count = 0
    try:
        with _open(path, "w") as out:
            for row in cache.export_rows():
                out.write(json.dumps(row, sort_keys=True) + "\n")
                count += row["table"] == "results"
    except OSError as error:
        raise CacheError(f"cannot write {path}: {error.strerror or error}") from None
    finally:
        cache.close()
    print(f"nnrag results export: {count} results from {cache.path} -> {path}", file=sys.stderr)
    return 0


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with _open(path, "r") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ConfigError(
                    f"not an nnrag results export: {error.msg}", file=path, line=number
                ) from None
            if isinstance(row, dict):
                yield row


def _cmd_results_import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise ConfigError("file not found; write one with `nnrag results export FILE`", file=path)
    cache = _cache(args)
    try:
        added, kept = cache.import_rows(_rows(path))
    except (OSError, EOFError) as error:
        raise CacheError(f"cannot read {path}: {error}") from None
    finally:
        cache.close()
    print(
        f"nnrag results import: {added} results added to {cache.path} "
        f"({kept} already there or not results)",
        file=sys.stderr,
    )
    return 0
