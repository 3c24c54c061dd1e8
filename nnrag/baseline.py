"""Expected results of a run (a baseline): what each block reached last time, and the verdict.

The pattern of PyTorch's expected-accuracy files: a committed file says, per block, whether it
passed and the stage it reached; a run is compared against it, so CI fails only when something
changes for the worse. The file (``--nnrag-baseline FILE``, written by
``--nnrag-update-baseline``) is JSON with one block per line, so that diffs stay readable::

    {
      "nnrag_baseline": 1,
      "depth": "forward",
      "blocks": {
        "timm:timm.layers.mlp:Mlp": {"outcome": "passed", "stage_reached": "forward"},
        "tv:torchvision.ops.x:Y": {"outcome": "failed", "stage_reached": "closed",
                                   "category": "missing-external"}
      }
    }

Verdicts (:func:`compare`): a block that fails as expected (at the expected stage or later)
is an expected failure; one that fails at an earlier stage, or fails where it passed, is a
regression; one that passes where it failed is a new pass; a block without an entry is new.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nnrag.errors import ConfigError
from nnrag.model import STAGES, BlockRef, Stage, ValidationResult, stage_index

FORMAT = 1
Verdict = Literal["as-expected", "expected-failure", "regression", "new-pass", "new-block"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Expected:
    """One block's entry in the baseline."""

    passed: bool
    stage_reached: Stage | None
    category: str | None = None

    def describe(self) -> str:
        """``fails after closed [source-import]`` / ``passes``, for messages."""
        if self.passed:
            return "passes"
        reached = self.stage_reached or "nothing"
        return f"fails after {reached} [{self.category or 'uncategorized'}]"


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """Expected outcomes by block id, for runs to ``depth``."""

    depth: Stage
    blocks: Mapping[str, Expected]
    path: Path | None = None


def _reach(stage: Stage | None) -> int:
    return -1 if stage is None else stage_index(stage)


def expected_of(result: ValidationResult) -> Expected:
    """The baseline entry a result would write."""
    return Expected(
        passed=result.passed,
        stage_reached=result.stage_reached,
        category=None if result.passed else result.category,
    )


def compare(expected: Expected | None, result: ValidationResult) -> Verdict:
    """How ``result`` compares with the block's baseline entry (``None``: not in the baseline)."""
    if expected is None:
        return "as-expected" if result.passed else "new-block"
    if result.passed:
        return "as-expected" if expected.passed else "new-pass"
    if expected.passed or _reach(result.stage_reached) < _reach(expected.stage_reached):
        return "regression"
    return "expected-failure"


def explain(verdict: Verdict, expected: Expected | None, result: ValidationResult) -> str:
    """One line telling what changed against the baseline."""
    now = expected_of(result).describe()
    if verdict == "new-block":
        return (
            f"{result.block_id} is not in the baseline and {now}; "
            "run with --nnrag-update-baseline to record it"
        )
    was = expected.describe() if expected else "absent"
    return f"baseline: {was}; now: {now}"


def configured_reason(entries: Iterable[tuple[str, str]], block: BlockRef) -> str | None:
    """The reason of the first ``(pattern, reason)`` of repos.json ``xfail``/``skip`` that
    names ``block`` (fnmatch on its id, ``module:Class`` or ``Class``), else ``None``."""
    names = (block.id, f"{block.module}:{block.name}", block.name)
    for pattern, reason in entries:
        if any(fnmatch.fnmatchcase(name, pattern) for name in names):
            return reason
    return None


def load_baseline(path: Path) -> Baseline:
    """Read a baseline file; a missing file is an empty baseline (the first update writes it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Baseline(depth="forward", blocks={}, path=path)
    except OSError as error:
        raise ConfigError(f"cannot read the baseline: {error}", file=path) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"malformed JSON: {error.msg}", file=path, line=error.lineno, col=error.colno
        ) from None
    if not isinstance(data, dict) or data.get("nnrag_baseline") != FORMAT:
        raise ConfigError(
            f'not an nnrag baseline (expected {{"nnrag_baseline": {FORMAT}, ...}}); '
            "write one with --nnrag-update-baseline",
            file=path,
        )
    depth = data.get("depth", "forward")
    if depth not in STAGES:
        raise ConfigError(f"unknown depth {depth!r}", file=path, key="depth")
    blocks: dict[str, Expected] = {}
    raw = data.get("blocks") or {}
    if not isinstance(raw, dict):
        raise ConfigError("'blocks' must map block ids to entries", file=path, key="blocks")
    for block_id, entry in raw.items():
        blocks[block_id] = _entry(block_id, entry, path)
    return Baseline(depth=depth, blocks=blocks, path=path)


def _entry(block_id: str, entry: object, path: Path) -> Expected:
    if not isinstance(entry, dict) or entry.get("outcome") not in ("passed", "failed"):
        raise ConfigError(
            f'entry of {block_id} must be {{"outcome": "passed"|"failed", "stage_reached": ...}}',
            file=path,
            key=block_id,
        )
    reached = entry.get("stage_reached")
    if reached is not None and reached not in STAGES:
        raise ConfigError(f"unknown stage {reached!r} for {block_id}", file=path, key=block_id)
    return Expected(
        passed=entry["outcome"] == "passed",
        stage_reached=reached,
        category=entry.get("category"),
    )


def updated(
    baseline: Baseline,
    results: Iterable[ValidationResult],
    *,
    depth: Stage,
    problems: Iterable[str] = (),
) -> Baseline:
    """``baseline`` with the entries of ``results`` replaced (blocks not run are kept).

    ``problems`` are source-level problems that failed (``source:<parse-errors>``).
    """
    blocks = dict(baseline.blocks) if baseline.depth == depth else {}
    for result in results:
        blocks[result.block_id] = expected_of(result)
    for problem in problems:
        blocks[problem] = Expected(passed=False, stage_reached=None, category="source-problem")
    return Baseline(depth=depth, blocks=blocks, path=baseline.path)


def baseline_text(baseline: Baseline) -> str:
    """The file's text: sorted, one block per line."""
    lines = []
    for block_id in sorted(baseline.blocks):
        expected = baseline.blocks[block_id]
        entry: dict[str, object] = {
            "outcome": "passed" if expected.passed else "failed",
            "stage_reached": expected.stage_reached,
        }
        if not expected.passed:
            entry["category"] = expected.category
        lines.append(f"    {json.dumps(block_id)}: {json.dumps(entry)}")
    body = ",\n".join(lines)
    blocks = "{\n" + body + "\n  }" if lines else "{}"
    return (
        f'{{\n  "nnrag_baseline": {FORMAT},\n  "depth": {json.dumps(baseline.depth)},\n'
        f'  "blocks": {blocks}\n}}\n'
    )


def write_baseline(baseline: Baseline, path: Path) -> Path:
    """Write ``baseline`` to ``path`` (parent folders created); return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(baseline_text(baseline), encoding="utf-8")
    return path


def baseline_from_report(report: Mapping[str, object]) -> Baseline:
    """A baseline from a run report (``nnrag report baseline``: turn a CI artifact into one)."""
    from nnrag.validate.results import result_from_dict

    depth = str(report.get("depth") or "forward")
    if depth not in STAGES:
        raise ConfigError(f"the report's depth {depth!r} is not a stage")
    entries = report.get("blocks")
    if not isinstance(entries, list):
        raise ConfigError("not an nnrag report (no 'blocks' list)")
    results = [
        result_from_dict(
            {
                "block_id": entry["id"],
                "depth": depth,
                "stage_reached": entry.get("stage_reached"),
                "failed_stage": entry.get("failed_stage"),
                "category": entry.get("category"),
            }
        )
        for entry in entries
    ]
    return updated(Baseline(depth=depth, blocks={}), results, depth=depth)


def unfetched_counts(sources: Iterable[str], baseline: Baseline | None) -> dict[str, int]:
    """The failed items each source that could not be fetched counts as in the pass rate:
    its blocks in ``baseline`` (source-level problem ids aside), else 1."""
    known = baseline.blocks if baseline is not None else {}
    counts: dict[str, int] = {}
    for source in sources:
        blocks = sum(1 for key in known if key.split(":", 1)[0] == source and ":<" not in key)
        counts[source] = max(blocks, 1)
    return counts


__all__ = [
    "Baseline",
    "Expected",
    "Verdict",
    "baseline_from_report",
    "baseline_text",
    "compare",
    "configured_reason",
    "expected_of",
    "explain",
    "load_baseline",
    "unfetched_counts",
    "updated",
    "write_baseline",
]
