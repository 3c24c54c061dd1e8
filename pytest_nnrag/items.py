"""Collection nodes and test items: repos.json -> one collector per source -> one item per block.

Reusable pieces (``pytest_nnrag.vendored`` builds on them):

- :class:`ResultItem`: an item whose outcome is a :class:`~nnrag.model.ValidationResult`;
  subclasses implement :meth:`ResultItem.validate`. It records the result (stash,
  ``user_properties``, the ``pytest_nnrag_result`` hook), fails with :class:`BlockFailure`
  and prints :func:`nnrag.report.format_result` instead of a traceback (the text the CLI
  prints too).
- :class:`ProblemItem`: an item that always fails with a fixed message (a source that
  could not be materialized, files that did not parse), so nothing is silent.
- Results cross xdist as :func:`nnrag.validate.results.result_to_dict` JSON.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nnrag.errors import ConfigError, NnragError
from nnrag.model import STAGES, BlockHints, BlockRef, ValidationResult
from nnrag.report import format_diagnostic, format_result
from pytest_nnrag.state import STATE_KEY, require_state

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from nnrag.model import Diagnostic, Settings, SourceSpec, Stage
    from pytest_nnrag.state import NnragState

RESULT_KEY = pytest.StashKey[ValidationResult]()
REPORT_ATTR = "nnrag"
"""Name of the TestReport attribute carrying :func:`nnrag.validate.results.result_to_dict` JSON."""


class NnragFailure(Exception):
    """A test failure whose text is shown as is (no traceback)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class BlockFailure(NnragFailure):
    """A block did not reach the requested depth."""

    def __init__(self, result: ValidationResult, *, note: str = "") -> None:
        text = format_result(result)
        super().__init__(f"{note}\n{text}" if note else text)
        self.result = result


class ExpectedFailure(BlockFailure):
    """A block failed as the baseline says (the item's xfail marker catches exactly this)."""


# --------------------------------------------------------------------------- results


def error_result(block_id: str, depth: Stage, error: BaseException) -> ValidationResult:
    """A failed result for a block whose validation raised instead of returning.

    A :class:`ConfigError` is the user's (e.g. a ``pytest_nnrag_block_inputs`` answer that is
    not a hints dict): category ``config``, at ``instantiate``, where the hints are used.
    Anything else is nnrag's own failure: ``internal-error``.
    """
    message = str(error) if isinstance(error, NnragError) else f"{type(error).__name__}: {error}"
    user = isinstance(error, ConfigError)
    return ValidationResult(
        block_id=block_id,
        depth=depth,
        stage_reached=None,
        failed_stage="instantiate" if user else STAGES[0],
        category="config" if user else "internal-error",
        message=message,
    )


def hints_from_hook(block_id: str, value: object) -> BlockHints:
    """Turn a ``pytest_nnrag_block_inputs`` result into :class:`BlockHints`."""
    from nnrag.plugins import hints_from_answer

    try:
        return hints_from_answer(block_id, value, "pytest_nnrag_block_inputs")
    except ConfigError as error:
        raise ConfigError(str(error), file="conftest.py") from error


# --------------------------------------------------------------------------- items


class NnragItem(pytest.Item):
    """An nnrag item: its failures print their own text, never nnrag's traceback."""

    def repr_failure(
        self,
        excinfo: ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, BlockFailure) and style == "long":
            return format_result(excinfo.value.result, all_frames=True)
        if isinstance(excinfo.value, NnragFailure):
            return excinfo.value.text
        return super().repr_failure(excinfo, style=style)


class ResultItem(NnragItem):
    """An item whose outcome is a ValidationResult (subclasses implement :meth:`validate`)."""

    block_id: str
    depth: Stage

    def validate(self) -> ValidationResult:
        """Validate the block; raise only for errors that are not about the block."""
        raise NotImplementedError

    def runtest(self) -> None:
        try:
            result = self.validate()
        except NnragError as error:
            result = error_result(self.block_id, self.depth, error)
        except Exception as error:  # a bug in nnrag: keep the traceback, still count it
            self.record(error_result(self.block_id, self.depth, error))
            raise
        self.record(result)
        self.judge(result)

    def judge(self, result: ValidationResult) -> None:
        """Raise :class:`BlockFailure` unless ``result`` passed (subclasses add a baseline)."""
        if not result.passed:
            raise BlockFailure(result)

    def record(self, result: ValidationResult) -> None:
        """Keep ``result`` for the report and expose its key facts to junitxml."""
        self.stash[RESULT_KEY] = result
        self.user_properties.extend(
            [
                ("nnrag_block_id", result.block_id),
                ("nnrag_stage_reached", result.stage_reached or ""),
                ("nnrag_category", result.category or ""),
                ("nnrag_cached", "true" if result.cached else "false"),
            ]
        )
        if result.notes:  # junitxml; a pass shows them with -rP (a failure's text has them)
            self.user_properties.append(("nnrag_notes", "\n".join(result.notes)))
            if result.passed:
                self.add_report_section("call", "nnrag notes", "\n".join(result.notes))
        self.ihook.pytest_nnrag_result(item=self, result=result)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # a line is needed where pytest reports a skip marker at the item's location
        return self.path, 0, f"[nnrag] {self.block_id}"


class BlockItem(ResultItem):
    """One discovered block, validated through the session's Workspace."""

    def __init__(self, *, block: BlockRef, depth: Stage, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.block = block
        self.block_id = block.id
        self.depth = depth
        self.add_marker("nnrag")

    def judge(self, result: ValidationResult) -> None:
        """Compare with the baseline (when judging): expected failures raise
        :class:`ExpectedFailure` (the xfail marker added at collection turns them into
        xfails), regressions and failing new blocks :class:`BlockFailure` with what changed."""
        state = require_state(self.config, "an nnrag block")
        if not state.judging or state.baseline is None:
            super().judge(result)
            return
        from nnrag.baseline import compare, explain

        expected = state.baseline.blocks.get(self.block_id)
        verdict = compare(expected, result)
        self.user_properties.append(("nnrag_verdict", verdict))
        if verdict == "expected-failure":
            raise ExpectedFailure(result, note=explain(verdict, expected, result))
        if verdict in ("regression", "new-block"):
            label = "REGRESSION" if verdict == "regression" else "NEW BLOCK FAILS"
            raise BlockFailure(result, note=f"{label}: {explain(verdict, expected, result)}")

    def hints(self) -> BlockHints | None:
        """The ``pytest_nnrag_block_inputs`` answer for this block, if any."""
        answer = self.ihook.pytest_nnrag_block_inputs(
            block_id=self.block_id, class_name=self.block.name, config=self.config
        )
        return None if answer is None else hints_from_hook(self.block_id, answer)

    def validate(self) -> ValidationResult:
        state = require_state(self.config, "an nnrag block")
        result = state.workspace.validate(self.block, depth=self.depth, hints=self.hints())
        if result.cached and self.block_id in state.harvest_pass:  # validated this session
            result = dataclasses.replace(result, cached=False)
        return result


def problem_id(item: pytest.Item) -> str:
    """A source-level problem's id in the baseline: ``source:<parse-errors>``."""
    return f"{item.parent.name if item.parent else ''}:{item.name}"


class ProblemItem(NnragItem):
    """A source-level problem shown as one failing test (never silently dropped)."""

    def __init__(self, *, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text
        self.add_marker("nnrag")

    def runtest(self) -> None:
        raise NnragFailure(self.text)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"[nnrag] {self.nodeid}"


# --------------------------------------------------------------------------- collectors

SOURCE_ERROR = "<source-error>"
PARSE_ERRORS = "<parse-errors>"


class SourceCollector(pytest.Collector):
    """The blocks of one source (and its problems), sorted by name."""

    def __init__(
        self,
        *,
        blocks: Sequence[BlockRef],
        depth: Stage,
        errors: Sequence[str] = (),
        problems: Sequence[Diagnostic] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.blocks = tuple(blocks)
        self.depth = depth
        self.errors = tuple(errors)
        self.problems = tuple(problems)

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = []
        state = self.config.stash[STATE_KEY]
        if self.errors:
            text = "\n".join([f"source {self.name!r} could not be materialized:", *self.errors])
            items.append(ProblemItem.from_parent(self, name=SOURCE_ERROR, text=text))
        if self.problems:
            count = len(self.problems)
            header = f"{count} file{'s' if count != 1 else ''} of source {self.name!r} not indexed:"
            text = "\n".join([header, *(f"  {format_diagnostic(p)}" for p in self.problems)])
            items.append(ProblemItem.from_parent(self, name=PARSE_ERRORS, text=text))
        known = state.baseline.blocks if state.judging and state.baseline is not None else {}
        for problem in items:
            expected = known.get(problem_id(problem))
            if expected is not None and not expected.passed:
                reason = f"baseline: {problem.name} of source {self.name!r} expected"
                problem.add_marker(pytest.mark.xfail(reason=reason, raises=NnragFailure))
        spec = next((s for s in state.settings.sources if s.name == self.name), None)
        for block in self.blocks:
            name = f"{block.module}.{block.name}"
            item = BlockItem.from_parent(self, name=name, block=block, depth=self.depth)
            _mark(item, block, spec, state)
            items.append(item)
        return sorted(items, key=lambda item: item.name)


def _mark(item: BlockItem, block: BlockRef, spec: SourceSpec | None, state: NnragState) -> None:
    """repos.json ``skip`` / ``xfail`` entries and the baseline's expected failures."""
    from nnrag.baseline import configured_reason

    skip = configured_reason(spec.skip if spec else (), block)
    if skip is not None:
        item.add_marker(pytest.mark.skip(reason=f"repos.json skip: {skip}"))
        return
    xfail = configured_reason(spec.xfail if spec else (), block)
    if xfail is not None:
        item.add_marker(
            pytest.mark.xfail(
                reason=f"repos.json xfail: {xfail}", raises=BlockFailure, strict=state.strict
            )
        )
        return
    expected = state.baseline.blocks.get(block.id) if state.baseline else None
    if state.judging and expected is not None and not expected.passed:
        item.add_marker(
            pytest.mark.xfail(
                reason=f"baseline: {expected.describe()}",
                raises=ExpectedFailure,
                strict=state.strict,
            )
        )


class RepoFile(pytest.Collector):
    """The repos.json file: builds the index once (under the cache lock) and discovers blocks.

    A plain Collector rather than a ``pytest.File`` so that it can live outside the rootdir
    and is not filtered by file-based collection logic (``--lf`` still filters its items).
    """

    def collect(self) -> list[pytest.Collector]:
        state = self.config.stash[STATE_KEY]
        state.repos_collected = True
        workspace = state.workspace
        stats = state.index_stats = workspace.build()
        for message in stats.warnings:
            warnings.warn(pytest.PytestConfigWarning(f"nnrag: {message}"), stacklevel=1)
        blocks = workspace.blocks()
        errors = {name: [why] for name, why in stats.unfetched.items()}
        unmatched = {
            (source, entry)
            for source, entries in workspace.unmatched_paths().items()
            for entry in entries
        }
        problems: dict[str, list[Diagnostic]] = {}
        for problem in stats.problems:
            if problem.code == "NNR406" and (problem.source, problem.path) in unmatched:
                continue  # a configuration warning (in the summary and report), not a file
            problems.setdefault(problem.source, []).append(problem)
        grouped: dict[str, list[BlockRef]] = {}
        for block in blocks:
            grouped.setdefault(block.source, []).append(block)
        names = sorted(set(grouped) | set(errors) | set(problems))
        return [
            SourceCollector.from_parent(
                self,
                name=name,
                blocks=sorted(grouped.get(name, ()), key=lambda b: (b.module, b.name)),
                depth=state.settings.depth,
                errors=errors.get(name, ()),
                problems=problems.get(name, ()),
            )
            for name in names
        ]

    def repr_failure(self, excinfo: ExceptionInfo[BaseException]) -> str | TerminalRepr:  # type: ignore[override]  # Collector's own signature has no style
        if isinstance(excinfo.value, NnragError):
            return f"nnrag could not collect {self.path}: {excinfo.value}"
        return super().repr_failure(excinfo)


class RepoTreeFile(RepoFile, pytest.File):
    """The repos.json met while walking the test folders (``pytest repos.json::src``)."""


def repos_node_id(path: Path, rootpath: Path) -> str:
    """``repos.json`` node id: the rootdir-relative path, or the file name outside rootdir."""
    try:
        return path.relative_to(rootpath).as_posix()
    except ValueError:
        return path.name


def make_repo_file(session: pytest.Session, settings: Settings, path: Path) -> RepoFile:
    """The collector for ``path`` (the repos.json), as a direct child of the session."""
    del settings  # the collector reads settings from the stash, like the items
    return RepoFile.from_parent(
        session,
        name=path.name,
        path=path,
        nodeid=repos_node_id(path, session.config.rootpath),
    )
