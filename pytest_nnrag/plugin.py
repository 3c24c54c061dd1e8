"""pytest plugin entry point: options and hooks that adapt pytest to nnrag's library calls.

Inert unless ``--nnrag-repos`` (or the ini option ``nnrag_repos``) is given: this module
imports only pytest; nnrag's library is imported inside hooks once the plugin is active,
and torch is never imported in the test process (only in the sandbox's children).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_nnrag.fixtures import (
    nnrag_extract,
    nnrag_index,
    nnrag_replay,
    nnrag_validate,
    nnrag_workspace,
)
from pytest_nnrag.options import add_options
from pytest_nnrag.run_state import make_state, path_option
from pytest_nnrag.state import STATE_KEY, NnragState

if TYPE_CHECKING:
    from nnrag.model import BlockRef, Stage, ValidationResult
    from nnrag.validate.harvesting import HarvestPass

__all__ = [
    "nnrag_extract",
    "nnrag_index",
    "nnrag_replay",
    "nnrag_validate",
    "nnrag_workspace",
]

SESSION_PLUGIN = "nnrag-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_nnrag import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "nnrag: a test of one nnrag block (added by pytest-nnrag)")
    repos = path_option(config, "nnrag_repos")
    if repos is None:
        return
    from nnrag.workspace import collect_rarely

    collect_rarely()  # a run holds the index and the extractions: a large, growing heap
    state = make_state(config, repos)
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(NnragSession(config, state), SESSION_PLUGIN)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Never walk into an nnrag cache folder: its checkouts hold other projects' tests.
    (nnrag is imported only for a folder with a cache tag: an inactive plugin stays inert.)"""
    if not (collection_path / "CACHEDIR.TAG").is_file():
        return None
    from nnrag.cachedir import is_cache_dir

    return True if is_cache_dir(collection_path) else None


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()
        del config.stash[STATE_KEY]
    plugin = config.pluginmanager.get_plugin(SESSION_PLUGIN)
    if plugin is not None:
        config.pluginmanager.unregister(plugin)


def _crash_result(report: pytest.TestReport, depth: Stage) -> ValidationResult | None:
    """The ``crash`` result of the block whose xdist worker died running it.

    Node ids of blocks are ``<repos.json>::<source>::<module>.<Class>``.
    """
    from nnrag.model import ValidationResult

    parts = report.nodeid.split("::")
    if len(parts) != 3 or "." not in parts[2]:
        return None
    module, name = parts[2].rsplit(".", 1)
    return ValidationResult(
        block_id=f"{parts[1]}:{module}:{name}",
        depth=depth,
        stage_reached=None,
        failed_stage="import",
        category="crash",
        message=f"the pytest worker running this block died: {report.longreprtext.strip()}",
    )


# --------------------------------------------------------------------------- session hooks


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class NnragSession:
    """Hooks of an active run: collect the blocks, gather results, write the summary."""

    def __init__(self, config: pytest.Config, state: NnragState) -> None:
        self.config = config
        self.state = state
        self.report: dict[str, Any] | None = None

    def pytest_report_header(self, config: pytest.Config) -> str:
        settings = self.state.settings
        count = len(settings.sources)
        return (
            f"nnrag: {self.state.repos_file} ({count} source{'s' if count != 1 else ''}), "
            f"depth {settings.depth}, cache {settings.cache_dir}"
        )

    @pytest.hookimpl(trylast=True)
    def pytest_nnrag_block_inputs(
        self, block_id: str, class_name: str, config: pytest.Config
    ) -> dict[str, Any] | None:
        """Forward to nnrag's own plugins (entry points, nnragfile.py), after conftest.py's
        answers: the CLI and pytest see the same plugins."""
        hints = self.state.workspace.plugins().block_inputs(block_id, class_name)
        if hints is None:
            return None
        return {
            "args": list(hints.init_args),
            "kwargs": dict(hints.init_kwargs),
            "inputs": None if hints.inputs is None else list(hints.inputs),
            "input_kwargs": dict(hints.input_kwargs),
        }

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        """Collect the repos.json where pytest walks over it (so its node ids select tests)."""
        if file_path != self.state.repos_file:
            return None
        from pytest_nnrag.items import RepoTreeFile

        return RepoTreeFile.from_parent(parent, path=file_path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Add the blocks' items unless the walk met repos.json (before -k, --lf, ... select);
        order them likely-slow first (``--nnrag-order``)."""
        from pytest_nnrag.items import make_repo_file
        from pytest_nnrag.schedule import recorded_durations, reorder_items

        if not self.state.repos_collected:  # else the walk (or a node id) collected repos.json
            node = make_repo_file(session, self.state.settings, self.state.repos_file)
            items.extend(session.genitems(node))
        recorded = recorded_durations(config, self.state)
        reorder_items(items, state=self.state, recorded=recorded, order=self.state.order)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: every worker gets the durations read once (all order alike)."""
        from pytest_nnrag.schedule import DURATIONS_KEY, read_durations

        if self.state.durations is None:
            self.state.durations = read_durations(self.state)
        node.workerinput[DURATIONS_KEY] = self.state.durations

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first block runs: the harvest pass of every source this session runs
        whole, so the first session's verdicts use the frozen harvest too (xdist workers
        split the pass and wait for each other)."""
        if session.config.option.collectonly or not session.items:
            return
        from pytest_nnrag.items import BlockItem

        items = {
            item.block.id: item
            for item in session.items
            if isinstance(item, BlockItem) and not item.get_closest_marker("skip")
        }
        if not items:
            return
        from nnrag.validate.harvesting import harvest_first

        workerinput = getattr(self.config, "workerinput", {})
        progress = _PassProgress(str(workerinput.get("workerid", "")))

        def validate(block: BlockRef, final: bool) -> None:
            item = items[block.id]
            with contextlib.suppress(Exception):  # the item runs again and reports the error
                self.state.workspace.validate(
                    block, depth=item.depth, hints=item.hints(), final_harvest=final
                )
            progress.step()

        done = harvest_first(
            self.state.workspace,
            [item.block for item in items.values()],
            validate,
            share=(
                int(str(workerinput.get("workerid", "gw0"))[2:] or 0),
                int(workerinput.get("workercount", 1)),
            ),
            run_id=str(workerinput.get("testrunuid", "")),
            folder=self.state.settings.cache_dir / "harvest-pass",
            wait_s=max(60.0, len(items) * self.state.settings.timeout_s),
        )
        self.state.harvest_pass = done.ran
        if done.ran:
            progress.finish(done)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Attach the block's result and category to the report (plain JSON: it crosses xdist)."""
        category = self._block_category(item) if call.when == "call" else None
        if category is not None:
            item.user_properties.append(("nnrag_block_category", category))
        report = yield
        if call.when == "call":
            from nnrag.validate.results import result_to_dict
            from pytest_nnrag.items import REPORT_ATTR, RESULT_KEY, ProblemItem

            result = item.stash.get(RESULT_KEY, None)
            if result is not None:
                setattr(report, REPORT_ATTR, result_to_dict(result))
                setattr(report, f"{REPORT_ATTR}_block_category", category)
                setattr(report, f"{REPORT_ATTR}_sandbox", self.state.workspace.sandbox_layers())
            elif isinstance(item, ProblemItem):
                from pytest_nnrag.items import problem_id

                setattr(report, f"{REPORT_ATTR}_problem", item.text)
                setattr(report, f"{REPORT_ATTR}_problem_id", problem_id(item))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from nnrag.validate.results import result_from_dict
        from pytest_nnrag.items import REPORT_ATTR

        data = getattr(report, REPORT_ATTR, None)
        if isinstance(data, dict):
            result = result_from_dict(data)
            self.state.results[result.block_id] = result
            category = getattr(report, f"{REPORT_ATTR}_block_category", None)
            if isinstance(category, str):
                self.state.block_categories[result.block_id] = category
            verdict = dict(report.user_properties).get("nnrag_verdict")
            if isinstance(verdict, str):
                self.state.verdicts[result.block_id] = verdict
            layers = getattr(report, f"{REPORT_ATTR}_sandbox", None)
            if isinstance(layers, dict):
                self.state.sandbox_layers = layers
        elif str(report.when) == "???" and report.failed:  # xdist: its worker died in this item
            crashed = _crash_result(report, self.state.settings.depth)
            if crashed is not None:
                self.state.results[crashed.block_id] = crashed
        problem = getattr(report, f"{REPORT_ATTR}_problem", None)
        ident = getattr(report, f"{REPORT_ATTR}_problem_id", None)
        if isinstance(ident, str):
            self.state.problem_ids.add(ident)
            self._count_unfetched(ident)
        if isinstance(problem, str):
            self.state.source_failures[report.nodeid] = " ".join(
                line.strip() for line in problem.splitlines()[:2]
            )

    def _count_unfetched(self, ident: str) -> None:
        """A source that could not be fetched: its blocks in the baseline (else 1) fail."""
        from nnrag.baseline import unfetched_counts
        from pytest_nnrag.items import SOURCE_ERROR

        source, _, name = ident.rpartition(":")
        if name == SOURCE_ERROR:
            self.state.unfetched.update(unfetched_counts([source], self.state.baseline))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the report and badge, also for a run that found no block (the controller)."""
        if _is_worker(self.config):
            return
        from nnrag.badge import write_badge
        from nnrag.report import build_report, write_report
        from nnrag.validate.stages import complete_harvests

        complete_harvests(self.state.workspace, self.state.results)

        self.report = build_report(
            self.state.results.values(),
            depth=self.state.settings.depth,
            block_categories=self.state.block_categories,
            dedup=self._dedup() if self.state.dedup and self.state.results else None,
            warnings=self._warnings(),
            unfetched=self.state.unfetched,
        )
        if self.state.shard is not None:
            index, count, names = self.state.shard
            self.report["shard"] = {"index": index, "count": count, "sources": list(names)}
        if self.state.baseline is not None:
            self.report["baseline"] = self._baseline_summary()
        if self.state.sandbox_layers is not None:
            self.report["sandbox"] = self.state.sandbox_layers
        if self.state.source_failures:  # sources that could not be fetched or indexed
            self.report["source_failures"] = dict(sorted(self.state.source_failures.items()))
        if self.state.report_path is not None:
            self.state.written.append(write_report(self.report, self.state.report_path))
        if self.state.badge_path is not None:
            self.state.written.extend(write_badge(self.report, self.state.badge_path))
        if self.state.update_baseline and self.state.baseline is not None:
            self._write_baseline()

    def _warnings(self) -> list[str]:
        """Configuration warnings; the first says why, when no block was validated."""
        from nnrag.errors import NnragError
        from nnrag.report import empty_run_reason

        sources = [spec.name for spec in self.state.settings.sources]
        unmatched: dict[str, tuple[str, ...]] = {}
        source_errors: tuple[str, ...] = ()
        problems = 0
        if sources:
            try:
                stats = self.state.index_stats
                if stats is None:  # the controller of xdist: a cheap update of the index
                    stats = self.state.index_stats = self.state.workspace.build()
                source_errors, problems = stats.source_errors, len(stats.problems)
                unmatched = self.state.workspace.unmatched_paths()
            except NnragError as error:
                return [f"nnrag could not read the index: {error}"]
        stats = self.state.index_stats
        warnings = [*(stats.warnings if stats is not None else ())]
        warnings += [
            f"source {name!r}: 'paths' entry {entry!r} matches no .py file (a folder or file "
            "prefix, or a glob, relative to the source root)"
            for name, entries in unmatched.items()
            for entry in entries
        ]
        if self.state.results:
            return warnings
        if self.state.shard is not None and not sources:
            index, count, _ = self.state.shard
            return [
                f"no block found: shard {index}/{count} has no source (more shards "
                "than source groups)"
            ]
        every = {
            name: entries
            for name, entries in unmatched.items()
            if set(entries) == set(self._spec_paths(name))
        }
        reason = empty_run_reason(
            sources, source_errors=source_errors, unmatched=every, problems=problems
        )
        return [reason, *warnings]

    def _spec_paths(self, name: str) -> tuple[str, ...]:
        spec = next((s for s in self.state.settings.sources if s.name == name), None)
        return spec.paths if spec is not None else ()

    def _baseline_summary(self) -> dict[str, Any]:
        """The report's ``baseline`` section: file, verdict counts, changed blocks."""
        baseline = self.state.baseline
        assert baseline is not None  # callers check
        by_verdict: dict[str, list[str]] = {}
        for block_id, verdict in sorted(self.state.verdicts.items()):
            by_verdict.setdefault(verdict, []).append(block_id)
        not_run = set(baseline.blocks) - set(self.state.results) - self.state.problem_ids
        return {
            "file": str(baseline.path),
            "updated": self.state.update_baseline,
            "strict": self.state.strict,
            "as_expected": len(by_verdict.get("as-expected", ())),
            "expected_failures": len(by_verdict.get("expected-failure", ())),
            "regressions": by_verdict.get("regression", []),
            "new_passes": by_verdict.get("new-pass", []),
            "new_blocks_failing": by_verdict.get("new-block", []),
            "not_run": len(not_run),
        }

    def _write_baseline(self) -> None:
        from nnrag.baseline import updated, write_baseline

        baseline = self.state.baseline
        assert baseline is not None  # set from --nnrag-baseline
        assert baseline.path is not None
        new = updated(
            baseline,
            self.state.results.values(),
            depth=self.state.settings.depth,
            problems=self.state.problem_ids,
        )
        self.state.written.append(write_baseline(new, baseline.path))

    def _block_category(self, item: pytest.Item) -> str | None:
        """The category of a block item (computed where the block ran), else ``None``."""
        from nnrag.errors import NnragError
        from pytest_nnrag.items import BlockItem

        if not isinstance(item, BlockItem):
            return None
        try:
            return self.state.workspace.category(item.block)
        except NnragError as error:  # the result already tells the story; keep the run going
            self.state.source_failures[item.nodeid] = f"no category: {error}"
            return None

    def _dedup(self) -> dict[str, Any]:
        """De-duplication figures of every block in scope (``--nnrag-dedup``; controller only)."""
        from nnrag.errors import NnragError
        from nnrag.retrieve.dedup import dedup_summary, dedup_workspace

        try:
            return dedup_summary(dedup_workspace(self.state.workspace))
        except NnragError as error:
            return {"error": str(error)}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if _is_worker(self.config) or self.report is None:
            return
        from nnrag.report import summary_lines

        terminalreporter.write_sep("=", "nnrag summary")
        if self.state.sandbox_layers is not None:
            from nnrag.validate.sandbox import describe_layers

            terminalreporter.write_line(describe_layers(self.state.sandbox_layers))
        empty = not self.report["summary"]["blocks"]
        verbose = self.config.get_verbosity() > 0
        for number, line in enumerate(summary_lines(self.report, verbose=verbose)):
            terminalreporter.write_line(line, red=empty and number == 0, bold=empty)
        for line in baseline_lines(self.report.get("baseline")):
            terminalreporter.write_line(line)
        for nodeid, first in sorted(self.state.source_failures.items()):
            terminalreporter.write_line(f"source problem: {nodeid}: {first}")
        for path in self.state.written:
            terminalreporter.write_line(f"nnrag wrote {path}")


def baseline_lines(section: dict[str, Any] | None, *, shown: int = 10) -> list[str]:
    """The summary's baseline lines: counts, then the blocks that changed (first ``shown``)."""
    if not section:
        return []
    if section["updated"]:
        return [f"baseline: updating {section['file']}"]
    lines = [
        f"baseline {section['file']}: {section['as_expected']} as expected, "
        f"{section['expected_failures']} expected failures (xfail), "
        f"{len(section['regressions'])} regressions, {len(section['new_passes'])} new passes, "
        f"{len(section['new_blocks_failing'])} new blocks failing, "
        f"{section['not_run']} baseline blocks not run"
    ]
    for key, label in (
        ("regressions", "regression"),
        ("new_blocks_failing", "new block failing"),
        ("new_passes", "new pass" + (" (strict: fails)" if section["strict"] else "")),
    ):
        for block_id in section[key][:shown]:
            lines.append(f"  {label}: {block_id}")
        if len(section[key]) > shown:
            lines.append(f"  ... and {len(section[key]) - shown} more {label}s")
    if section["new_passes"] and not section["strict"]:
        lines.append("  record the new passes with --nnrag-update-baseline")
    return lines


class _PassProgress:
    """Progress of the harvest pass on stderr: it runs before pytest's own progress starts,
    and an xdist worker's stderr reaches the terminal. One line at the start, then one per
    ``every`` blocks."""

    def __init__(self, worker: str, *, every: int = 50) -> None:
        self._who = f"nnrag {worker}: " if worker else "nnrag: "
        self._done = 0
        self._every = every

    def step(self) -> None:
        if self._done == 0:
            print(
                f"{self._who}harvest pass: each block of a source run whole runs once, "
                "recording its parts' real arguments, before the first verdict",
                file=sys.__stderr__,
                flush=True,
            )
        self._done += 1
        if self._done % self._every == 0:
            print(
                f"{self._who}harvest pass: {self._done} blocks run", file=sys.__stderr__, flush=True
            )

    def finish(self, done: HarvestPass) -> None:
        """The line that says the pass is over here (and how long this process waited)."""
        print(
            f"{self._who}harvest pass: over, {done.ran_here} of {len(done.ran)} blocks run here, "
            f"then {done.waited_s:.1f} s waiting for the other workers",
            file=sys.__stderr__,
            flush=True,
        )
