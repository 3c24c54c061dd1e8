"""Tests for nnrag.baseline: verdicts, the file format, updates."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.baseline import (
    Baseline,
    Expected,
    baseline_from_report,
    compare,
    configured_reason,
    load_baseline,
    updated,
    write_baseline,
)
from nnrag.errors import ConfigError
from nnrag.model import BlockRef, ValidationResult


def _result(reached: str | None, *, passed: bool = False) -> ValidationResult:
    return ValidationResult(
        block_id="s:m:C",
        depth="forward",
        stage_reached="forward" if passed else reached,  # type: ignore[arg-type]  # a stage name
        failed_stage=None if passed else "instantiate",
        category=None if passed else "ctor-args",
    )


FAILS_AT_IMPORT = Expected(passed=False, stage_reached="import", category="ctor-args")


def test_verdicts() -> None:
    assert compare(FAILS_AT_IMPORT, _result("import")) == "expected-failure"
    assert compare(FAILS_AT_IMPORT, _result("instantiate")) == "expected-failure"  # got further
    assert compare(FAILS_AT_IMPORT, _result("closed")) == "regression"  # an earlier stage
    assert compare(FAILS_AT_IMPORT, _result(None, passed=True)) == "new-pass"
    passes = Expected(passed=True, stage_reached="forward")
    assert compare(passes, _result("import")) == "regression"
    assert compare(passes, _result(None, passed=True)) == "as-expected"
    assert compare(None, _result("import")) == "new-block"
    assert compare(None, _result(None, passed=True)) == "as-expected"


def test_round_trip_and_update(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    first = updated(Baseline(depth="forward", blocks={}), [_result("import")], depth="forward")
    write_baseline(first, path)
    loaded = load_baseline(path)
    assert loaded.blocks == {"s:m:C": FAILS_AT_IMPORT}
    again = updated(loaded, [_result(None, passed=True)], depth="forward", problems=["s:<x>"])
    assert again.blocks["s:m:C"].passed
    assert not again.blocks["s:<x>"].passed
    # another depth starts over
    assert updated(loaded, [], depth="import").blocks == {}


def test_missing_file_is_empty_and_bad_files_are_errors(tmp_path: Path) -> None:
    assert load_baseline(tmp_path / "none.json").blocks == {}
    bad = tmp_path / "bad.json"
    bad.write_text('{"nnrag_baseline": 1, "blocks": {"x": {"outcome": "maybe"}}}')
    with pytest.raises(ConfigError, match="entry of x must be"):
        load_baseline(bad)
    bad.write_text("{")
    with pytest.raises(ConfigError, match="malformed JSON"):
        load_baseline(bad)


def test_from_report() -> None:
    report = {
        "depth": "closed",
        "blocks": [
            {"id": "a:m:X", "outcome": "passed", "stage_reached": "closed", "failed_stage": None},
            {
                "id": "a:m:Y",
                "outcome": "failed",
                "stage_reached": "compile",
                "failed_stage": "closed",
                "category": "syntax",
            },
        ],
    }
    baseline = baseline_from_report(report)
    assert baseline.depth == "closed"
    assert baseline.blocks["a:m:X"].passed
    assert baseline.blocks["a:m:Y"] == Expected(
        passed=False, stage_reached="compile", category="syntax"
    )


def test_configured_reason_matches_like_include() -> None:
    block = BlockRef(source="s", module="pkg.mod", name="Net", path="pkg/mod.py", line=1)
    entries = [("Other", "no"), ("pkg.mod:N*", "slow")]
    assert configured_reason(entries, block) == "slow"
    assert configured_reason([("s:pkg.mod:Net", "id")], block) == "id"
    assert configured_reason([("Nope", "x")], block) is None
