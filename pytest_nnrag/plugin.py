"""pytest plugin entry point: options and hooks that adapt pytest to nnrag's library calls.

Inert unless ``--nnrag-repos`` (or the ini option ``nnrag_repos``) is given: this module
imports only pytest; nnrag's library is imported inside hooks once the plugin is active,
and torch is never imported in the test process (only in the sandbox's children).
"""

from __future__ import annotations

import argparse
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_nnrag.fixtures import nnrag_extract, nnrag_index, nnrag_validate, nnrag_workspace
from pytest_nnrag.state import STATE_KEY, NnragState

if TYPE_CHECKING:
    from nnrag.model import Stage, ValidationResult

__all__ = [
    "nnrag_extract",
    "nnrag_index",
    "nnrag_validate",
    "nnrag_workspace",
]

STAGES = ("parse", "compile", "closed", "import", "instantiate", "forward", "backward")
"""Mirror of ``nnrag.model.STAGES`` (kept here so that option parsing imports nothing)."""
DEFAULT_DEPTH: Stage = "forward"
SESSION_PLUGIN = "nnrag-session"


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds > 0 (e.g. --nnrag-timeout 60), got {text!r}"
        )
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nnrag", "nnrag: one test per nn.Module block")
    group.addoption(
        "--nnrag-repos",
        metavar="PATH",
        default=None,
        help="Collect one test per block of the sources in this repos.json "
        "(activates the plugin). Ini: nnrag_repos.",
    )
    group.addoption(
        "--nnrag-cache",
        metavar="DIR",
        default=None,
        help="Cache folder for sources, the index and results "
        "(default: $NNRAG_CACHE or the user cache dir). Ini: nnrag_cache.",
    )
    group.addoption(
        "--nnrag-depth",
        choices=STAGES,
        default=None,
        help=f"Stage every block must reach to pass (default: {DEFAULT_DEPTH}). Ini: nnrag_depth.",
    )
    group.addoption(
        "--nnrag-timeout",
        metavar="S",
        type=_timeout,
        default=None,
        help="Seconds a block may take in the sandbox before it fails as a timeout "
        "(default: 60). Ini: nnrag_timeout.",
    )
    group.addoption(
        "--nnrag-sandbox",
        choices=("default", "strict"),
        default=None,
        help="strict: refuse to run blocks unless every kernel isolation layer (namespaces, "
        "seccomp, Landlock) is active (default: run with what the kernel gives, and say so "
        "in the summary). Ini: nnrag_sandbox.",
    )
    group.addoption(
        "--nnrag-report",
        metavar="PATH",
        default=None,
        help="Write the JSON run report (schema: nnrag/report.py) here. Ini: nnrag_report.",
    )
    group.addoption(
        "--nnrag-badge",
        metavar="PATH",
        default=None,
        help="Write an SVG pass-rate badge here, and its shields.io endpoint JSON "
        "beside it (same name, .json). Ini: nnrag_badge.",
    )
    group.addoption(
        "--nnrag-revalidate",
        action="store_true",
        default=False,
        help="Validate every block again, ignoring cached results.",
    )
    group.addoption(
        "--nnrag-dedup",
        action="store_true",
        default=False,
        help="After the run, de-duplicate every block (exact, lexical, structural; class "
        "and closure) and add the figures to the report and summary. Ini: nnrag_dedup.",
    )
    parser.addini("nnrag_repos", "repos.json whose blocks are collected (relative to the ini file)")
    parser.addini("nnrag_cache", "nnrag cache folder (relative to the ini file)")
    parser.addini("nnrag_depth", f"stage every block must reach: {', '.join(STAGES)}")
    parser.addini("nnrag_timeout", "seconds per block in the sandbox")
    parser.addini("nnrag_sandbox", "default or strict (every kernel isolation layer required)")
    parser.addini("nnrag_report", "path of the JSON run report (relative to the ini file)")
    parser.addini("nnrag_badge", "path of the SVG pass-rate badge (relative to the ini file)")
    parser.addini("nnrag_dedup", "add de-duplication figures to the report", type="bool")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_nnrag import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "nnrag: a test of one nnrag block (added by pytest-nnrag)")
    repos = _path_option(config, "nnrag_repos")
    if repos is None:
        return
    state = _make_state(config, repos)
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(NnragSession(config, state), SESSION_PLUGIN)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()
        del config.stash[STATE_KEY]
    plugin = config.pluginmanager.get_plugin(SESSION_PLUGIN)
    if plugin is not None:
        config.pluginmanager.unregister(plugin)


# --------------------------------------------------------------------------- options


def _ini_base(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath else config.rootpath


def _path_option(config: pytest.Config, name: str) -> Path | None:
    """A path option: the flag relative to the invocation folder, else the ini value."""
    flag = config.getoption(name)
    if flag:
        return (config.invocation_params.dir / str(flag)).resolve()
    ini = str(config.getini(name) or "").strip()
    if ini:
        return (_ini_base(config) / ini).resolve()
    return None


def _depth(config: pytest.Config) -> Stage:
    flag = config.getoption("nnrag_depth")
    if flag:
        return flag  # type: ignore[no-any-return]  # argparse checked the choices
    ini = str(config.getini("nnrag_depth") or "").strip()
    if not ini:
        return DEFAULT_DEPTH
    if ini not in STAGES:
        raise pytest.UsageError(
            f"ini option nnrag_depth = {ini!r} is not a stage; use one of {', '.join(STAGES)}"
        )
    return ini  # type: ignore[return-value]  # checked against STAGES just above


def _timeout_option(config: pytest.Config) -> float | None:
    flag = config.getoption("nnrag_timeout")
    if flag is not None:
        return float(flag)
    ini = str(config.getini("nnrag_timeout") or "").strip()
    if not ini:
        return None
    try:
        return _timeout(ini)
    except argparse.ArgumentTypeError:
        raise pytest.UsageError(
            f"ini option nnrag_timeout = {ini!r}: expected a number of seconds > 0, "
            "e.g. nnrag_timeout = 60"
        ) from None


def _make_state(config: pytest.Config, repos: Path) -> NnragState:
    if not repos.is_file():
        raise pytest.UsageError(
            f"--nnrag-repos: {repos} is not a file; pass the path of a repos.json "
            "(examples/repos.json shows the format)"
        )
    from nnrag.config import load_settings
    from nnrag.errors import NnragError

    overrides: dict[str, Any] = {
        "depth": _depth(config),
        "revalidate": bool(config.getoption("nnrag_revalidate")),
    }
    timeout = _timeout_option(config)
    if timeout is not None:
        overrides["timeout_s"] = timeout
    mode = config.getoption("nnrag_sandbox") or str(config.getini("nnrag_sandbox") or "").strip()
    if mode not in ("", "default", "strict"):
        raise pytest.UsageError(f"ini option nnrag_sandbox = {mode!r}: expected default or strict")
    if mode:
        overrides["sandbox"] = mode
    try:
        settings = load_settings(repos, cache_dir=_path_option(config, "nnrag_cache"), **overrides)
    except NnragError as error:  # ConfigError, CacheError: the user's input
        raise pytest.UsageError(str(error)) from None
    return NnragState(
        settings=settings,
        repos_file=repos,
        report_path=_path_option(config, "nnrag_report"),
        badge_path=_path_option(config, "nnrag_badge"),
        dedup=bool(config.getoption("nnrag_dedup") or config.getini("nnrag_dedup")),
    )


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
        """Add the blocks' items unless the walk met repos.json (before -k, --lf, ... select)."""
        if self.state.repos_collected:
            return  # the walk (or a node id argument) already collected repos.json
        from pytest_nnrag.items import make_repo_file

        node = make_repo_file(session, self.state.settings, self.state.repos_file)
        items.extend(session.genitems(node))

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
                setattr(report, f"{REPORT_ATTR}_problem", item.text)
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
            layers = getattr(report, f"{REPORT_ATTR}_sandbox", None)
            if isinstance(layers, dict):
                self.state.sandbox_layers = layers
        elif str(report.when) == "???" and report.failed:  # xdist: its worker died in this item
            crashed = _crash_result(report, self.state.settings.depth)
            if crashed is not None:
                self.state.results[crashed.block_id] = crashed
        problem = getattr(report, f"{REPORT_ATTR}_problem", None)
        if isinstance(problem, str):
            self.state.source_failures[report.nodeid] = " ".join(
                line.strip() for line in problem.splitlines()[:2]
            )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the report and badge (the controller only, when blocks ran)."""
        if _is_worker(self.config) or not self.state.results:
            return
        from nnrag.report import build_report, write_badge, write_report

        self.report = build_report(
            self.state.results.values(),
            depth=self.state.settings.depth,
            block_categories=self.state.block_categories,
            dedup=self._dedup() if self.state.dedup else None,
        )
        if self.state.sandbox_layers is not None:
            self.report["sandbox"] = self.state.sandbox_layers
        if self.state.source_failures:  # sources that could not be fetched or indexed
            self.report["source_failures"] = dict(sorted(self.state.source_failures.items()))
        if self.state.report_path is not None:
            self.state.written.append(write_report(self.report, self.state.report_path))
        if self.state.badge_path is not None:
            self.state.written.extend(write_badge(self.report, self.state.badge_path))

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
        if _is_worker(self.config) or (self.report is None and not self.state.source_failures):
            return
        from nnrag.report import summary_lines

        terminalreporter.write_sep("=", "nnrag summary")
        if self.state.sandbox_layers is not None:
            from nnrag.validate.sandbox import describe_layers

            terminalreporter.write_line(describe_layers(self.state.sandbox_layers))
        if self.report is not None:
            for line in summary_lines(self.report):
                terminalreporter.write_line(line)
        for nodeid, first in sorted(self.state.source_failures.items()):
            terminalreporter.write_line(f"source problem: {nodeid}: {first}")
        for path in self.state.written:
            terminalreporter.write_line(f"nnrag wrote {path}")
