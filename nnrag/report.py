"""The run report: one JSON document and its terminal summary table (the badge: ``badge``).

The pytest plugin and the CLI both build their report here, so a run reads the
same everywhere. Everything is plain data: :func:`build_report` turns
:class:`~nnrag.model.ValidationResult` objects into a JSON-ready ``dict``;
:func:`summary_lines` and :func:`write_report` render it (:mod:`nnrag.badge` the badge).

Every other rendering of a result or a diagnostic lives here too, so the pytest item, the
CLI, the pre-commit hook and the JSON documents say the same thing: :func:`block_entry` (a
result in the report), :func:`format_result` (the failure text of a pytest item and of
``nnrag validate -v``), :func:`verdict_line` (one line per block in the CLI);
:func:`format_diagnostic` (``path:line:col: CODE message``, the check's and the index's
lines, closure problems with their dependency path) and :func:`diagnostic_json`.

Report schema (``--nnrag-report PATH``, ``nnrag validate --report PATH``)::

    {
      "nnrag_version": "0.1.0",
      "torch_version": "2.13.0" | null,      # installed torch (read from metadata, never imported)
      "depth": "forward",                    # the stage every block had to reach
      "summary": {
        "blocks": 934, "passed": 812, "failed": 122,
        "pass_rate": 0.8694,                 # passed / blocks, 0.0 when there are no blocks
        "stages": {                          # parse .. depth, in pipeline order
          "parse": {"passed": 934, "failed": 0},   # passed: reached this stage or beyond
          ...                                      # failed: stopped at exactly this stage
        },
        "categories": {"unresolved-name": 40, ...},   # failure categories, most frequent first
        "noted": 22,                         # blocks with notes (a refused probe they handled)
        "block_categories": {                # what the blocks are (retrieve.categorize), by name
          "attention": {"blocks": 120, "passed": 101}, ...   # blocks of unknown category: absent
        },
        "sources": {"timm": {...the same keys as summary, without "sources"...}, ...},
        "unfetched": 1,                      # failed items counted for sources that could not
        "unfetched_sources": {"mmdet": 1}    # be fetched (per source: its block count in the
      },                                     # baseline, else 1); pass_rate = passed /
                                             # (blocks + unfetched), so is the badge
      "blocks": [                            # sorted by id
        {"id": "timm:timm.layers.mlp:Mlp", "source": "timm",
         "outcome": "passed" | "failed",
         "stage_reached": "forward" | null,  # last stage that passed
         "failed_stage": null | "closed",    # first stage that failed
         "category": null | "unresolved-name",   # the failure category
         "message": "",                      # why it failed ("" when it passed)
         "cached": true,                     # the result came from the result cache
         "duration_s": 0.12,
         "file": "/path/to/extracted/block.py" | null,
         "block_category": "normalization" | null,   # the block's own category
         "extract_s": 0.004 | null,          # resolving + emitting the block file
         "lines": 212 | null,                # lines of the block file
         "source_files": 3 | null,           # source files its closure inlines
         "linked_sources": [],               # other sources whose code it inlines
         "notes": ["refused: socket.__new__ (family AF_INET6; ...) (the block handled the
                   refusal)"],               # what the sandbox refused and the block handled
         "recipe": {"origin": "synthesized", "init_args": [...], "init_kwargs": {...},
                    "inputs": [...], "seed": 0, "lossless": true, ...} | null},
                                             # how it was built and fed (nnrag.recipes), passed
                                             # or failed; null before a constructor call
        ...
      ],
      "warnings": ["source 'timm': 'paths' entry 'timm/nope' matches no .py file", ...],
                                             # configuration warnings; when no block was
                                             # found, the first one says so and why
      "baseline": {...},                     # only with --nnrag-baseline (nnrag.baseline)
      "shard": {"index": 1, "count": 4, "sources": ["timm"]},   # only with --nnrag-shard
      "merged_from": ["shard-1.json", ...],  # only in `nnrag report merge` output
      "dedup": {                             # only with --nnrag-dedup (retrieve.dedup)
        "params": {"lexical_threshold": 0.9, "structural_threshold": 0.9, ...},
        "class": {"blocks": 934, "skipped": 0, "seconds": 7.2,   # the target classes alone
                  "exact": {"unique": 880, "unique_fraction": 0.9422, "merges": 54,
                            "clusters": 40},
                  "lexical": {...same keys...}, "structural": {...same keys...}},
        "closure": {...the same for the whole extracted closures...}
      }
    }
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from nnrag.model import STAGES, Diagnostic, Recipe, Stage, ValidationResult, stage_index
from nnrag.recipes import recipe_to_dict

REPORT_KEYS = ("nnrag_version", "torch_version", "depth", "summary", "blocks", "warnings")
BLOCK_KEYS = (
    "id",
    "source",
    "outcome",
    "stage_reached",
    "failed_stage",
    "category",
    "message",
    "cached",
    "duration_s",
    "file",
    "block_category",
    "extract_s",
    "lines",
    "source_files",
    "linked_sources",
    "notes",
    "recipe",
)


def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (without importing it), or ``None``."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def source_of(block_id: str) -> str:
    """The source name of a block id ``source:module:Class``."""
    return block_id.split(":", 1)[0]


def failed_stage_of(result: ValidationResult) -> Stage | None:
    """The stage a result stopped at (the one after the last passed), ``None`` when it passed."""
    if result.passed:
        return None
    if result.failed_stage is not None:
        return result.failed_stage
    if result.stage_reached is None:
        return STAGES[0]
    following = stage_index(result.stage_reached) + 1
    return STAGES[min(following, stage_index(result.depth))]


def block_entry(result: ValidationResult, *, block_category: str | None = None) -> dict[str, Any]:
    """One entry of the report's ``blocks`` list (``block_category``: what the block is)."""
    return {
        "id": result.block_id,
        "source": source_of(result.block_id),
        "outcome": "passed" if result.passed else "failed",
        "stage_reached": result.stage_reached,
        "failed_stage": failed_stage_of(result),
        "category": None if result.passed else result.category,
        "message": "" if result.passed else result.message,
        "cached": result.cached,
        "duration_s": round(result.duration_s, 4),
        "file": result.file,
        "block_category": block_category,
        "extract_s": None if result.extract_s is None else round(result.extract_s, 4),
        "lines": result.lines,
        "source_files": result.source_files,
        "linked_sources": list(result.linked_sources),
        "notes": list(result.notes),
        "recipe": None if result.recipe is None else recipe_to_dict(result.recipe),
    }


def verdict_line(result: ValidationResult) -> str:
    """``PASS id (stage, s)`` or ``FAIL id at stage [category]: message`` (the CLI's line):
    the stage, category and message of :func:`format_result` and :func:`block_entry`."""
    if result.passed:
        line = f"PASS {result.block_id} ({result.stage_reached}, {result.duration_s:.2f} s)"
    else:
        stopped, category = failed_stage_of(result), result.category or "uncategorized"
        line = f"FAIL {result.block_id} at {stopped} [{category}]: {result.message}"
    notes = "".join(f"; note: {note}" for note in result.notes)
    return line + (" (cached)" if result.cached else "") + notes


def format_result(
    result: ValidationResult, *, all_frames: bool = False, revalidate: str = "--nnrag-revalidate"
) -> str:
    """The failure text: stage, category, message, block frames, dependency path or recipe,
    file. The last three frames in the block file, every one with ``all_frames``;
    ``revalidate`` is the option that bypasses the result cache where the text is shown."""
    stopped = failed_stage_of(result) or result.depth
    reached = result.stage_reached or "nothing"
    lines = [
        f"{result.block_id} did not reach {result.depth}: "
        f"failed at stage {stopped} (last passed: {reached})",
        f"category: {result.category or 'uncategorized'}",
    ]
    message = result.message.strip() or "(no message)"
    first, *rest = message.splitlines()
    lines.append(f"message: {first}")
    lines.extend(f"  {line}" for line in rest)
    frames = list(result.frames) if all_frames else list(result.frames[-3:])
    if frames:
        more = len(result.frames) - len(frames)
        earlier = f", {more} earlier: --tb=long" if more else ""
        lines.append(f"traceback (frames in the block file{earlier}):")
        lines.extend(f"  {frame}" for frame in frames)
    lines.extend(f"note: {note}" for note in result.notes)
    if result.dependency_path:
        lines.append(f"dependency path: {' -> '.join(result.dependency_path)}")
    if result.recipe is not None and (result.recipe.origin != "none" or result.recipe.init_args):
        lines.append(f"recipe: {format_recipe(result.recipe, result.block_id)}")
    if result.file:
        lines.append(f"file: {result.file}")
    if result.cached:
        lines.append(f"(cached result; pass {revalidate} to validate again)")
    return "\n".join(lines)


def format_recipe(recipe: Recipe, block_id: str) -> str:
    """``Class(args, kw=...)(inputs)`` as tried, with where the arguments came from."""
    name = block_id.rsplit(":", 1)[-1]
    init = [_short(value) for value in recipe.init_args]
    init += [f"{key}={_short(value)}" for key, value in recipe.init_kwargs.items()]
    feed = [_short(value) for value in recipe.inputs]
    feed += [f"{key}={_short(value)}" for key, value in recipe.input_kwargs.items()]
    text = f"{name}({', '.join(init)})({', '.join(feed)}) [{recipe.origin}"
    if recipe.attempts:
        text += f", {recipe.attempts} attempt{'s' if recipe.attempts != 1 else ''}"
    return text + "]"


def _short(value: object) -> str:
    if isinstance(value, Mapping) and "shape" in value:
        dtype = value.get("dtype", "float32")
        return f"tensor({list(value['shape'])}, {dtype})"
    text = json.dumps(value, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


def format_diagnostic(diagnostic: Diagnostic, *, path: str | None = None) -> str:
    """``path:line:col: CODE message``; a closure problem's message follows its dependency
    path (``... NNR503 Target -> helper: message``). ``path`` overrides the diagnostic's own
    (a block file as the user named it, a source file under its checkout)."""
    where = f"{diagnostic.path if path is None else path}:{diagnostic.line}:{diagnostic.col}"
    chain = " -> ".join(diagnostic.dependency_path)
    return f"{where}: {diagnostic.code} {chain + ': ' if chain else ''}{diagnostic.message}"


def diagnostic_json(diagnostic: Diagnostic) -> dict[str, Any]:
    """A closure problem as the block spec and ``nnrag extract --json`` write it: ``path`` is
    the dependency path (as before codes existed), ``location`` where it was found."""
    return {
        "code": diagnostic.code,
        "category": diagnostic.category,
        "message": diagnostic.message,
        "path": list(diagnostic.dependency_path),
        "location": diagnostic.location,
    }


def _summarize(entries: Sequence[Mapping[str, Any]], depth: Stage) -> dict[str, Any]:
    passed = sum(1 for entry in entries if entry["outcome"] == "passed")
    stages: dict[str, dict[str, int]] = {}
    for stage in STAGES[: stage_index(depth) + 1]:
        position = stage_index(stage)
        reached = sum(
            1
            for entry in entries
            if entry["stage_reached"] is not None
            and stage_index(entry["stage_reached"]) >= position
        )
        stopped = sum(1 for entry in entries if entry["failed_stage"] == stage)
        stages[stage] = {"passed": reached, "failed": stopped}
    counts = Counter(
        entry["category"] or "uncategorized" for entry in entries if entry["outcome"] == "failed"
    )
    categories = dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    kinds: dict[str, dict[str, int]] = {}
    for entry in entries:
        if entry["block_category"] is not None:
            kind = kinds.setdefault(entry["block_category"], {"blocks": 0, "passed": 0})
            kind["blocks"] += 1
            kind["passed"] += entry["outcome"] == "passed"
    return {
        "blocks": len(entries),
        "passed": passed,
        "failed": len(entries) - passed,
        "pass_rate": round(passed / len(entries), 4) if entries else 0.0,
        "stages": stages,
        "categories": categories,
        "noted": sum(1 for entry in entries if entry.get("notes")),
        "block_categories": dict(
            sorted(kinds.items(), key=lambda item: (-item[1]["blocks"], item[0]))
        ),
    }


def build_report(
    results: Iterable[ValidationResult],
    *,
    depth: Stage,
    nnrag_version: str | None = None,
    torch_version: str | None = None,
    block_categories: Mapping[str, str] | None = None,
    dedup: Mapping[str, Any] | None = None,
    warnings: Sequence[str] = (),
    unfetched: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The report document (schema in this module's docstring) for ``results``.

    ``unfetched`` maps each source that could not be fetched to the failed items it counts
    as (its last known block count, at least 1): they lower the pass rate and the badge.

    A block validated more than once (e.g. re-run by ``--lf``) counts once: its last result.
    ``block_categories`` maps block ids to their category; ``dedup`` (a
    :func:`nnrag.retrieve.dedup.dedup_summary`) is added under ``"dedup"`` when given;
    ``warnings`` are configuration warnings (see :func:`empty_run_reason`).
    """
    latest = {result.block_id: result for result in results}
    kinds = block_categories or {}
    entries = [
        block_entry(latest[block_id], block_category=kinds.get(block_id))
        for block_id in sorted(latest)
    ]
    report = report_from_entries(
        entries,
        depth=depth,
        nnrag_version=nnrag_version or distribution_version("nnrag") or "unknown",
        torch_version=torch_version if torch_version is not None else _torch_version(),
        warnings=warnings,
        unfetched=unfetched,
    )
    if dedup is not None:
        report["dedup"] = dict(dedup)
    return report


def report_from_entries(
    entries: Sequence[Mapping[str, Any]],
    *,
    depth: Stage,
    nnrag_version: str,
    torch_version: str | None,
    warnings: Sequence[str] = (),
    unfetched: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A report from ready block entries (sorted here by id): the summary is computed."""
    ordered = sorted((dict(entry) for entry in entries), key=lambda entry: str(entry["id"]))
    summary = _summarize(ordered, depth)
    by_source: dict[str, list[dict[str, Any]]] = {}
    for entry in ordered:
        by_source.setdefault(entry["source"], []).append(entry)
    summary["sources"] = {
        name: _summarize(group, depth) for name, group in sorted(by_source.items())
    }
    _count_unfetched(summary, unfetched or {})
    return {
        "nnrag_version": nnrag_version,
        "torch_version": torch_version,
        "depth": depth,
        "summary": summary,
        "blocks": ordered,
        "warnings": list(warnings),
    }


def _count_unfetched(summary: dict[str, Any], unfetched: Mapping[str, int]) -> None:
    """Sources that could not be fetched count as failed items in the pass rate."""
    counts = {name: max(1, int(count)) for name, count in sorted(unfetched.items())}
    total = sum(counts.values())
    summary["unfetched"] = total
    summary["unfetched_sources"] = counts
    items = summary["blocks"] + total
    summary["pass_rate"] = round(summary["passed"] / items, 4) if items else 0.0


def empty_run_reason(
    sources: Sequence[str],
    *,
    source_errors: Sequence[str] = (),
    unmatched: Mapping[str, Sequence[str]] | None = None,
    problems: int = 0,
) -> str:
    """The loud first warning of a run that found no block: what was configured and why.

    ``unmatched`` maps a source to its ``paths`` entries that matched no file.
    """
    if not sources:
        return "no block found: the configuration names no source"
    reasons: list[str] = []
    unmatched = unmatched or {}
    for name in sources:
        missed = list(unmatched.get(name, ()))
        if missed:
            quoted = ", ".join(repr(entry) for entry in missed)
            reasons.append(f"every 'paths' entry of {name!r} matched nothing ({quoted})")
    reasons.extend(source_errors)
    if problems:
        reasons.append(f"{problems} file{'s' if problems != 1 else ''} did not parse")
    if not reasons:
        reasons.append(
            "no top-level nn.Module subclass with a forward in the indexed files "
            "(check 'paths', 'include' and 'exclude')"
        )
    count = len(sources)
    return f"no block found in {count} source{'s' if count != 1 else ''}: " + "; ".join(reasons)


class ReportMergeError(ValueError):
    """Reports that cannot be merged (see :func:`merge_reports`); the message names them."""


def merge_reports(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One report from shard reports ``(name, report)``: their blocks, summary recomputed.

    The reports must agree on the depth; a block in two reports is an error (shards
    overlap). Warnings are kept once each; ``dedup`` figures are per run and dropped.
    """
    if not reports:
        raise ReportMergeError("no report to merge")
    depths = {str(report.get("depth")) for _, report in reports}
    if len(depths) != 1:
        listed = ", ".join(f"{name}: {report.get('depth')}" for name, report in reports)
        raise ReportMergeError(f"the reports were run to different depths ({listed})")
    seen: dict[str, str] = {}
    entries: list[Mapping[str, Any]] = []
    warnings: dict[str, None] = {}
    unfetched: dict[str, int] = {}
    for name, report in reports:
        for key in ("summary", "blocks"):
            if key not in report:
                raise ReportMergeError(f"{name} is not an nnrag report (no {key!r})")
        unfetched.update(report["summary"].get("unfetched_sources") or {})
        for entry in report["blocks"]:
            block_id = str(entry["id"])
            if block_id in seen:
                raise ReportMergeError(
                    f"block {block_id} is in both {seen[block_id]} and {name}: the shards "
                    "overlap (give every shard the same --nnrag-shard N and durations file)"
                )
            seen[block_id] = name
            entries.append(entry)
        warnings.update(dict.fromkeys(report.get("warnings") or ()))
    if entries:  # the shards that found blocks: an empty shard's "no block found" is moot
        warnings = {w: None for w in warnings if not w.startswith("no block found")}
    first = reports[0][1]
    merged = report_from_entries(
        entries,
        depth=next(iter(depths)),  # type: ignore[arg-type]  # a stage name read from the reports
        nnrag_version=str(first.get("nnrag_version") or "unknown"),
        torch_version=first.get("torch_version"),
        warnings=list(warnings),
        unfetched=unfetched,
    )
    merged["merged_from"] = [name for name, _ in reports]
    return merged


def _torch_version() -> str | None:
    return distribution_version("torch")


def write_report(report: Mapping[str, Any], path: Path) -> Path:
    """Write ``report`` as indented JSON to ``path`` (parent folders created); return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- terminal summary


def _cell(count: int, total: int) -> str:
    return f"{count} ({count / total:.0%})" if total else "0"


def summary_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """The summary table as rows of cells: a header, one row per source, then ``total``."""
    summary = report["summary"]
    stages = list(summary["stages"])
    rows = [["source", "blocks", *stages]]
    named = [*summary["sources"].items(), ("total", summary)]
    for name, part in named:
        total = part["blocks"]
        cells = [_cell(part["stages"][stage]["passed"], total) for stage in stages]
        rows.append([name, str(total), *cells])
    return rows


def summary_lines(report: Mapping[str, Any], *, top: int = 5, verbose: bool = False) -> list[str]:
    """The terminal summary: the per-source table, the top failure categories, the blocks
    with notes (the first, or with ``verbose`` every one)."""
    summary = report["summary"]
    if not summary["blocks"]:
        warnings = list(report.get("warnings") or ()) or ["no block found"]
        return [f"nnrag: NO BLOCK WAS VALIDATED: {warnings[0]}", *warnings[1:]]
    rows = summary_rows(report)
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        f"nnrag: {summary['passed']}/{counted_items(summary)} blocks reached "
        f"{report['depth']} ({summary['pass_rate']:.1%})"
    ]
    for name, count in (summary.get("unfetched_sources") or {}).items():
        lines.append(f"source {name!r} could not be fetched or read: counted as {count} failed")
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    categories = list(summary["categories"].items())[:top]
    if categories:
        lines.append("top failure categories:")
        width = max(len(name) for name, _ in categories)
        for name, count in categories:
            example = _example(report, name)
            lines.append(f"  {name.ljust(width)}  {count:>5}  e.g. {example}")
    lines.extend(_note_lines(report, verbose=verbose))
    kinds = summary.get("block_categories") or {}
    if kinds:
        shown = ", ".join(
            f"{name} {kind['passed']}/{kind['blocks']}" for name, kind in kinds.items()
        )
        lines.append(f"block categories (passed/blocks): {shown}")
    lines.extend(dedup_lines(report.get("dedup")))
    lines.extend(f"warning: {warning}" for warning in report.get("warnings") or ())
    return lines


def _note_lines(report: Mapping[str, Any], *, verbose: bool) -> list[str]:
    noted = [entry for entry in report["blocks"] if entry.get("notes")]
    if not noted:
        return []
    count = len(noted)
    lines = [f"notes: {count} block{'s' if count != 1 else ''} handled a refused probe"]
    for entry in noted if verbose else noted[:1]:
        lines.append(f"  {entry['id']}: {'; '.join(entry['notes'])}")
    if not verbose and count > 1:
        lines.append(f"  ... and {count - 1} more (verbose output and the report list them)")
    return lines


def dedup_lines(dedup: Mapping[str, Any] | None) -> list[str]:
    """One line per de-duplication level: unique blocks of the class and of the closure."""
    if not dedup:
        return []
    if "error" in dedup:
        return [f"dedup failed: {dedup['error']}"]
    scopes = [(name, dedup[name]) for name in ("class", "closure") if dedup.get(name)]
    lines = []
    for level in ("exact", "lexical", "structural"):
        cells = []
        for name, figures in scopes:
            if level in figures:
                found = figures[level]
                cells.append(
                    f"{name} {found['unique']}/{figures['blocks']} unique "
                    f"({found['unique_fraction']:.1%}), {found['clusters']} clusters"
                )
        if cells:
            lines.append(f"dedup {level + ':':<11} {'; '.join(cells)}")
    return lines


def _example(report: Mapping[str, Any], category: str) -> str:
    for entry in report["blocks"]:
        if entry["outcome"] == "failed" and (entry["category"] or "uncategorized") == category:
            message = str(entry["message"]).strip().splitlines()
            first = message[0] if message else ""
            if len(first) > 100:
                first = first[:97] + "..."
            return f"{entry['id']}: {first}" if first else str(entry["id"])
    return ""


def counted_items(summary: Mapping[str, Any]) -> int:
    """What the pass rate divides by: the blocks and the failed items of unfetched sources."""
    return int(summary["blocks"]) + int(summary.get("unfetched") or 0)
