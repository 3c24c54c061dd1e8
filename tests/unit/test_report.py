"""Tests for nnrag.report and nnrag.badge: report schema, stage counts, summary table, badge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nnrag.badge import badge_color, badge_message, shields_endpoint, write_badge
from nnrag.model import STAGES, Recipe, ValidationResult
from nnrag.recipes import recipe_from_dict
from nnrag.report import (
    BLOCK_KEYS,
    REPORT_KEYS,
    ReportMergeError,
    build_report,
    dedup_lines,
    empty_run_reason,
    failed_stage_of,
    merge_reports,
    summary_lines,
    write_report,
)


def _passed(block_id: str, *, cached: bool = False) -> ValidationResult:
    return ValidationResult(
        block_id=block_id, depth="forward", stage_reached="forward", cached=cached, file="/x.py"
    )


def _failed(block_id: str, stage: str, category: str, message: str) -> ValidationResult:
    reached = STAGES[STAGES.index(stage) - 1] if STAGES.index(stage) else None  # type: ignore[arg-type]  # stage: a str from the test table (a Stage literal)
    return ValidationResult(
        block_id=block_id,
        depth="forward",
        stage_reached=reached,  # type: ignore[arg-type]  # reached: a str from the test table (a Stage literal)
        failed_stage=stage,  # type: ignore[arg-type]  # stage: a str from the test table (a Stage literal)
        category=category,  # type: ignore[arg-type]  # a category string from the test table (a Category literal)
        message=message,
    )


@pytest.fixture
def results() -> list[ValidationResult]:
    return [
        _passed("timm:timm.a:A", cached=True),
        _passed("timm:timm.b:B"),
        _failed("timm:timm.c:C", "closed", "unresolved-name", "name 'foo' is not defined"),
        _failed("tv:tv.d:D", "forward", "input-shape", "mat1 and mat2 shapes cannot be multiplied"),
        _failed("tv:tv.e:E", "closed", "unresolved-name", "name 'bar' is not defined"),
    ]


def test_report_has_exactly_the_documented_keys(results: list[ValidationResult]) -> None:
    report = build_report(results, depth="forward", nnrag_version="0.1.0", torch_version="2.13.0")
    assert tuple(report) == REPORT_KEYS
    assert all(tuple(entry) == BLOCK_KEYS for entry in report["blocks"])
    assert set(report["summary"]) == {
        "blocks",
        "passed",
        "failed",
        "pass_rate",
        "stages",
        "categories",
        "noted",
        "block_categories",
        "sources",
        "unfetched",
        "unfetched_sources",
    }
    assert json.loads(json.dumps(report)) == report


def test_every_block_entry_carries_its_recipe_passed_or_failed() -> None:
    recipe = Recipe(
        origin="synthesized",
        init_args=(8,),
        init_kwargs={"norm_cfg": {"type": "BN"}},
        inputs=({"shape": [2, 8], "dtype": "float32"},),
        seed=3,
        attempts=2,
    )
    failed = ValidationResult(
        block_id="s:m:Head",
        depth="forward",
        stage_reached="import",
        failed_stage="instantiate",
        category="ctor-args",
        message="KeyError: 'type'",
        recipe=recipe,
    )
    report = build_report(
        [failed, _passed("s:m:Before")], depth="forward", nnrag_version="0.1.0", torch_version=None
    )
    entries = {entry["id"]: entry for entry in report["blocks"]}
    assert recipe_from_dict(json.loads(json.dumps(entries["s:m:Head"]["recipe"]))) == recipe
    assert entries["s:m:Before"]["recipe"] is None


def test_unfetched_sources_count_as_failed_items(results: list[ValidationResult]) -> None:
    report = build_report(
        results, depth="forward", nnrag_version="0", torch_version=None, unfetched={"gone": 3}
    )
    summary = report["summary"]
    assert (summary["blocks"], summary["passed"], summary["unfetched"]) == (5, 2, 3)
    assert summary["pass_rate"] == 0.25  # 2 of 5 blocks + 3 blocks of the unfetched source
    assert badge_message(report) == "25% (2/8)"
    line = "source 'gone' could not be fetched or read: counted as 3 failed"
    assert line in summary_lines(report)
    merged = merge_reports([("a.json", report), ("b.json", build_report([], depth="forward"))])
    assert merged["summary"]["unfetched_sources"] == {"gone": 3}
    assert merged["summary"]["pass_rate"] == 0.25


def test_summary_counts_stages_categories_and_sources(results: list[ValidationResult]) -> None:
    summary = build_report(results, depth="forward", torch_version="x")["summary"]
    assert (summary["blocks"], summary["passed"], summary["failed"]) == (5, 2, 3)
    assert summary["pass_rate"] == 0.4
    assert list(summary["stages"]) == list(STAGES[: STAGES.index("forward") + 1])
    assert summary["stages"]["compile"] == {"passed": 5, "failed": 0}
    assert summary["stages"]["closed"] == {"passed": 3, "failed": 2}
    assert summary["stages"]["forward"] == {"passed": 2, "failed": 1}
    assert summary["categories"] == {"unresolved-name": 2, "input-shape": 1}
    assert list(summary["sources"]) == ["timm", "tv"]
    assert summary["sources"]["tv"]["passed"] == 0
    assert summary["sources"]["timm"]["categories"] == {"unresolved-name": 1}
    assert "sources" not in summary["sources"]["timm"]


def test_block_entries_sorted_and_last_result_wins(results: list[ValidationResult]) -> None:
    rerun = _passed("timm:timm.c:C")
    report = build_report([*reversed(results), rerun], depth="forward", torch_version=None)
    ids = [entry["id"] for entry in report["blocks"]]
    assert ids == sorted(ids)
    entry = next(e for e in report["blocks"] if e["id"] == "timm:timm.c:C")
    assert entry["outcome"] == "passed"
    assert entry["category"] is None
    assert report["blocks"][0]["cached"] is True
    assert report["blocks"][0]["source"] == "timm"


def test_failed_stage_is_inferred_when_missing() -> None:
    result = ValidationResult(block_id="s:m:C", depth="forward", stage_reached="import")
    assert failed_stage_of(result) == "instantiate"
    nothing = ValidationResult(block_id="s:m:C", depth="closed", stage_reached=None)
    assert failed_stage_of(nothing) == "parse"
    assert failed_stage_of(_passed("s:m:C")) is None


def test_empty_report_has_zero_rate() -> None:
    report = build_report([], depth="closed", torch_version=None)
    assert report["summary"]["pass_rate"] == 0.0
    assert badge_message(report) == "0% (0/0)"


def test_summary_lines_show_table_and_top_categories(results: list[ValidationResult]) -> None:
    lines = summary_lines(build_report(results, depth="forward", torch_version=None))
    assert lines[0] == "nnrag: 2/5 blocks reached forward (40.0%)"
    assert lines[1].split() == ["source", "blocks", *STAGES[:6]]
    timm = lines[2].split()
    assert timm[:2] == ["timm", "3"]
    assert "2 (67%)" in lines[2]
    assert lines[4].startswith("total")
    assert "top failure categories:" in lines
    assert any(
        "unresolved-name" in line and "e.g. timm:timm.c:C: name 'foo' is not defined" in line
        for line in lines
    )


KINDS = {
    "timm:timm.a:A": "attention",
    "timm:timm.b:B": "convolution",
    "timm:timm.c:C": "attention",
    "tv:tv.d:D": "attention",
}
DEDUP = {
    "params": {"lexical_threshold": 0.9},
    "class": {
        "blocks": 5,
        "skipped": 0,
        "seconds": 0.01,
        "exact": {"unique": 4, "unique_fraction": 0.8, "merges": 1, "clusters": 1},
        "lexical": {"unique": 3, "unique_fraction": 0.6, "merges": 1, "clusters": 1},
        "structural": {"unique": 3, "unique_fraction": 0.6, "merges": 0, "clusters": 1},
    },
    "closure": {
        "blocks": 5,
        "skipped": 0,
        "seconds": 0.02,
        "exact": {"unique": 5, "unique_fraction": 1.0, "merges": 0, "clusters": 0},
        "lexical": {"unique": 5, "unique_fraction": 1.0, "merges": 0, "clusters": 0},
        "structural": {"unique": 4, "unique_fraction": 0.8, "merges": 1, "clusters": 1},
    },
}


def test_block_categories_per_entry_and_in_summary(results: list[ValidationResult]) -> None:
    report = build_report(results, depth="forward", torch_version=None, block_categories=KINDS)
    entries = {entry["id"]: entry for entry in report["blocks"]}
    assert entries["timm:timm.b:B"]["block_category"] == "convolution"
    assert entries["timm:timm.c:C"]["category"] == "unresolved-name"  # failure category stays
    assert entries["timm:timm.c:C"]["block_category"] == "attention"
    assert entries["tv:tv.e:E"]["block_category"] is None  # unknown: not counted
    summary = report["summary"]
    assert summary["block_categories"] == {
        "attention": {"blocks": 3, "passed": 1},
        "convolution": {"blocks": 1, "passed": 1},
    }
    assert list(summary["block_categories"]) == ["attention", "convolution"]
    assert summary["sources"]["tv"]["block_categories"] == {"attention": {"blocks": 1, "passed": 0}}
    assert "dedup" not in report
    lines = summary_lines(report)
    assert "block categories (passed/blocks): attention 1/3, convolution 1/1" in lines


def test_dedup_figures_in_report_and_summary_lines(results: list[ValidationResult]) -> None:
    report = build_report(results, depth="forward", torch_version=None, dedup=DEDUP)
    assert report["dedup"] == DEDUP
    assert tuple(report)[: len(REPORT_KEYS)] == REPORT_KEYS
    assert dedup_lines(DEDUP) == [
        "dedup exact:      class 4/5 unique (80.0%), 1 clusters; "
        "closure 5/5 unique (100.0%), 0 clusters",
        "dedup lexical:    class 3/5 unique (60.0%), 1 clusters; "
        "closure 5/5 unique (100.0%), 0 clusters",
        "dedup structural: class 3/5 unique (60.0%), 1 clusters; "
        "closure 4/5 unique (80.0%), 1 clusters",
    ]
    assert summary_lines(report)[-3:] == dedup_lines(DEDUP)
    assert dedup_lines(None) == []


@pytest.mark.parametrize(
    ("rate", "color"),
    [(1.0, "brightgreen"), (0.87, "green"), (0.6, "yellowgreen"), (0.1, "red"), (0.0, "red")],
)
def test_badge_color_by_rate(rate: float, color: str) -> None:
    assert badge_color(rate)[0] == color


def test_write_badge_and_endpoint(tmp_path: Path, results: list[ValidationResult]) -> None:
    report = build_report(results, depth="forward", torch_version=None)
    svg, endpoint = write_badge(report, tmp_path / "out" / "badge.svg")
    assert endpoint == tmp_path / "out" / "badge.json"
    text = svg.read_text()
    assert text.startswith("<?xml")
    assert "<svg" in text
    assert "40% (2/5)" in text
    assert "nnrag" in text
    assert json.loads(endpoint.read_text()) == {
        "schemaVersion": 1,
        "label": "nnrag",
        "message": "40% (2/5)",
        "color": "yellow",
    }
    assert shields_endpoint(report)["message"] == badge_message(report)


def test_write_report_round_trips(tmp_path: Path, results: list[ValidationResult]) -> None:
    report = build_report(results, depth="forward", torch_version="2.13.0")
    path = write_report(report, tmp_path / "deep" / "report.json")
    assert json.loads(path.read_text()) == report


def test_blocks_with_one_body_in_two_sources_stay_two_entries() -> None:
    results = [_passed("a:m:Mlp"), _passed("b:m:Mlp")]
    report = build_report(results, depth="forward", nnrag_version="0", torch_version=None)
    assert [entry["id"] for entry in report["blocks"]] == ["a:m:Mlp", "b:m:Mlp"]
    assert report["summary"]["passed"] == 2
    assert set(report["summary"]["sources"]) == {"a", "b"}


def test_block_entry_carries_extraction_facts() -> None:
    result = ValidationResult(
        block_id="a:m:Mlp",
        depth="forward",
        stage_reached="forward",
        extract_s=0.01234,
        lines=120,
        source_files=3,
        linked_sources=("b",),
    )
    entry = build_report([result], depth="forward", torch_version=None)["blocks"][0]
    assert (entry["extract_s"], entry["lines"], entry["source_files"]) == (0.0123, 120, 3)
    assert entry["linked_sources"] == ["b"]


def test_empty_report_says_why_no_block_was_found() -> None:
    reason = empty_run_reason(["timm"], unmatched={"timm": ["timm/nope", "other"]})
    assert reason.startswith("no block found in 1 source:")
    assert "'timm/nope'" in reason
    assert "'other'" in reason
    report = build_report([], depth="forward", torch_version=None, warnings=[reason])
    assert report["summary"]["blocks"] == 0
    lines = summary_lines(report)
    assert lines[0] == f"nnrag: NO BLOCK WAS VALIDATED: {reason}"
    assert badge_message(report) == "0% (0/0)"


def test_empty_run_without_sources_says_so() -> None:
    assert empty_run_reason([]) == "no block found: the configuration names no source"
    assert "no top-level nn.Module" in empty_run_reason(["x"])
    assert empty_run_reason(["x", "y"], source_errors=["x: gone", "y: gone"]).endswith(
        "in 2 sources: x: gone; y: gone"
    )


def test_merge_recomputes_the_summary(results: list[ValidationResult]) -> None:
    whole = build_report(results, depth="forward", nnrag_version="0", torch_version="2")
    half = len(results) // 2
    first = build_report(results[:half], depth="forward", nnrag_version="0", torch_version="2")
    second = build_report(results[half:], depth="forward", nnrag_version="0", torch_version="2")
    merged = merge_reports([("a.json", second), ("b.json", first)])
    assert merged["summary"] == whole["summary"]
    assert merged["blocks"] == whole["blocks"]
    assert merged["merged_from"] == ["a.json", "b.json"]


def test_merge_refuses_overlapping_shards_and_mixed_depths(
    results: list[ValidationResult],
) -> None:
    report = build_report(results, depth="forward", nnrag_version="0", torch_version="2")
    with pytest.raises(ReportMergeError, match=r"is in both a\.json and b\.json"):
        merge_reports([("a.json", report), ("b.json", report)])
    other = {**report, "depth": "import", "blocks": []}
    with pytest.raises(ReportMergeError, match="different depths"):
        merge_reports([("a.json", report), ("b.json", other)])


def test_merge_drops_an_empty_shards_no_block_warning(results: list[ValidationResult]) -> None:
    full = build_report(results, depth="forward", nnrag_version="0", torch_version="2")
    empty = build_report(
        [], depth="forward", nnrag_version="0", torch_version="2", warnings=["no block found: x"]
    )
    merged = merge_reports([("a.json", full), ("b.json", empty)])
    assert merged["warnings"] == []
    assert merge_reports([("b.json", empty)])["warnings"] == ["no block found: x"]


# --------------------------------------------------------------------------- renderings


def test_the_three_renderings_of_a_result_agree(results: list[ValidationResult]) -> None:
    from nnrag.report import block_entry, format_result, verdict_line

    failed = results[3]
    entry = block_entry(failed)
    line = verdict_line(failed)
    text = format_result(failed).splitlines()
    assert (
        line
        == f"FAIL tv:tv.d:D at {entry['failed_stage']} [{entry['category']}]: {entry['message']}"
    )
    assert (
        text[0]
        == "tv:tv.d:D did not reach forward: failed at stage forward (last passed: instantiate)"
    )
    assert text[1:3] == [f"category: {entry['category']}", f"message: {entry['message']}"]
    timed_out = ValidationResult(block_id="s:m:T", depth="forward", stage_reached="import")
    assert failed_stage_of(timed_out) == "instantiate"
    assert verdict_line(timed_out) == "FAIL s:m:T at instantiate [uncategorized]: "
    assert verdict_line(results[0]) == "PASS timm:timm.a:A (forward, 0.00 s) (cached)"


def test_diagnostic_renderings() -> None:
    from nnrag.diagnostics import closure_problem, diagnostic
    from nnrag.report import diagnostic_json, format_diagnostic

    finding = diagnostic("NNR101", path="b.py", line=3, col=5, name="x", hint="")
    assert format_diagnostic(finding) == (
        "b.py:3:5: NNR101 undefined name 'x': not defined in the block, not imported, not a builtin"
    )
    assert format_diagnostic(finding, path="dir/b.py").startswith("dir/b.py:3:5: NNR101 ")
    problem = closure_problem(
        "native-op", "imports mmcv._ext", where="mm/ops.py:7:1", dependency_path=("A", "f")
    )
    assert (problem.code, problem.category, problem.stage) == ("NNR503", "native-op", "closed")
    assert format_diagnostic(problem) == "mm/ops.py:7:1: NNR503 A -> f: imports mmcv._ext"
    assert diagnostic_json(problem) == {
        "code": "NNR503",
        "category": "native-op",
        "message": "imports mmcv._ext",
        "path": ["A", "f"],
        "location": "mm/ops.py:7:1",
    }


def test_the_registry_fixes_category_and_stage() -> None:
    from nnrag.diagnostics import CODES, diagnostic, restore, split_location

    with pytest.raises(KeyError, match="NNR999"):
        diagnostic("NNR999")
    with pytest.raises(ValueError, match="fixed category"):
        diagnostic("NNR101", category="syntax", name="x", hint="")
    with pytest.raises(ValueError, match="needs the category"):
        diagnostic("NNR301", detail="boom")
    failed = diagnostic("NNR301", category="runtime-error", stage="import", detail="boom")
    assert failed.message == "import failed [runtime-error]: boom"
    assert restore("NNR403", "syntax error: x").category == "syntax"
    assert {entry.origin for entry in CODES.values()} == {"check", "index", "resolve"}
    assert split_location("a:b/c.py:12:3") == ("a:b/c.py", 12, 3)
    assert split_location("c.py") == ("c.py", 0, 0)


def test_the_documented_table_is_the_registry() -> None:
    import nnrag.diagnostics
    from nnrag.diagnostics import CODES

    rows = [
        line.replace("(what failed)", "(what-failed)").split()[:4]
        for line in (nnrag.diagnostics.__doc__ or "").splitlines()
        if line.startswith("NNR")
    ]
    assert [row[0] for row in rows] == list(CODES)
    for code, category, stage, origin in rows:
        entry = CODES[code]
        assert (entry.category or "(what-failed)", entry.stage or "(where)", entry.origin) == (
            category,
            stage,
            origin,
        )


NOTE = (
    "refused: socket.__new__ (family AF_INET6; only unix sockets are allowed) "
    "(the block handled the refusal)"
)


def test_notes_reach_the_report_the_summary_and_every_rendering(
    results: list[ValidationResult],
) -> None:
    from dataclasses import replace

    from nnrag.report import block_entry, format_result, verdict_line

    noted = replace(results[1], notes=(NOTE,))
    failing = replace(results[3], notes=(NOTE,))
    mixed = [results[0], noted, failing, results[4]]
    report = build_report(mixed, depth="forward", nnrag_version="0", torch_version=None)
    entries = {entry["id"]: entry for entry in report["blocks"]}
    assert entries["timm:timm.b:B"]["notes"] == [NOTE]
    assert entries["timm:timm.b:B"]["outcome"] == "passed"
    assert entries["timm:timm.a:A"]["notes"] == []
    assert (report["summary"]["noted"], report["summary"]["sources"]["tv"]["noted"]) == (2, 1)
    quiet = summary_lines(report)
    assert "notes: 2 blocks handled a refused probe" in quiet
    assert f"  timm:timm.b:B: {NOTE}" in quiet
    assert any(line.startswith("  ... and 1 more") for line in quiet)
    loud = summary_lines(report, verbose=True)
    assert f"  tv:tv.d:D: {NOTE}" in loud
    assert not any(line.startswith("  ... and") for line in loud)
    assert verdict_line(noted) == f"PASS timm:timm.b:B (forward, 0.00 s); note: {NOTE}"
    assert f"note: {NOTE}" in format_result(failing).splitlines()
    assert block_entry(noted)["notes"] == [NOTE]
    assert "notes:" not in "\n".join(summary_lines(build_report(results, depth="forward")))
