"""pytest option ``--nnrag-vendored DIR``: one test per vendored block file of a project.

Inert unless the option (or the ini option ``nnrag_vendored``) is given: this module imports
only pytest; nnrag's library and the plugin's item classes are imported once it is active.
Each block file listed in ``DIR/nnrag-blocks.json`` (or, without a manifest, each ``*.py``
file in DIR with an nnrag header) becomes an item ``DIR::<file>`` that runs the static
checks (parse, compile, closed, header) and then validates the file in the sandbox to
``--nnrag-depth`` (default ``forward``), with the same failure text as the block items.
Without ``--nnrag-repos`` the main plugin's session hooks write ``--nnrag-report``,
``--nnrag-badge`` and the nnrag summary for these items; with it, its session does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_nnrag.options import SEARCH_CPU_S

if TYPE_CHECKING:
    from nnrag.model import Stage, ValidationResult
    from nnrag.validate.sandbox import Sandbox
    from pytest_nnrag.items import ResultItem

SESSION_PLUGIN = "nnrag-vendored-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nnrag", "nnrag: one test per nn.Module block")
    group.addoption(
        "--nnrag-vendored",
        metavar="DIR",
        action="append",
        default=None,
        help="Collect one test per vendored block file in DIR (see `nnrag extract --into`); "
        "repeatable. Depth, timeout and search budget from --nnrag-depth / --nnrag-timeout / "
        "--nnrag-search-budget. "
        "Ini: nnrag_vendored.",
    )
    parser.addini(
        "nnrag_vendored", "folders of vendored blocks (relative to the ini file)", "paths"
    )


def _folders(config: pytest.Config) -> list[Path]:
    flags = config.getoption("nnrag_vendored") or []
    folders = [(config.invocation_params.dir / str(flag)).resolve() for flag in flags]
    if not folders:
        folders = [Path(str(path)).resolve() for path in config.getini("nnrag_vendored") or []]
    return folders


def pytest_configure(config: pytest.Config) -> None:
    folders = _folders(config)
    if not folders:
        return
    for folder in folders:
        if not folder.is_dir():
            raise pytest.UsageError(
                f"--nnrag-vendored: {folder} is not a folder; pass the folder you vendored "
                "blocks into with `nnrag extract ID --into DIR`"
            )
    if _main_plugin_active(config):
        # the repos.json session records these items' results in its own report
        config.pluginmanager.register(VendoredSession(folders), SESSION_PLUGIN)
    else:
        config.pluginmanager.register(_reporting_session(config, folders), SESSION_PLUGIN)


def _main_plugin_active(config: pytest.Config) -> bool:
    try:
        return bool(config.getoption("nnrag_repos") or str(config.getini("nnrag_repos")).strip())
    except ValueError:  # the main nnrag plugin is disabled (-p no:nnrag)
        return False


def _reporting_session(config: pytest.Config, folders: list[Path]) -> VendoredSession:
    """A session that also writes --nnrag-report/--nnrag-badge and the nnrag summary.

    Reuses the main plugin's session (result gathering, report, badge, terminal summary);
    only collection differs.
    """
    from nnrag.model import Settings
    from pytest_nnrag.plugin import NnragSession
    from pytest_nnrag.state import NnragState

    def path(name: str) -> Path | None:
        """A path option of the main plugin: the flag, else the ini value (None if absent)."""
        try:
            flag = config.getoption(name)
            ini = str(config.getini(name) or "").strip()
        except ValueError:  # the main nnrag plugin is disabled (-p no:nnrag)
            return None
        if flag:
            return (config.invocation_params.dir / str(flag)).resolve()
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / ini).resolve() if ini else None

    depth: Stage = _option(config, "nnrag_depth") or "forward"
    cache = path("nnrag_cache") or config.rootpath / ".nnrag-cache"
    state = NnragState(
        settings=Settings(sources=(), cache_dir=cache, depth=depth),
        repos_file=folders[0] / "nnrag-blocks.json",
        report_path=path("nnrag_report"),
        badge_path=path("nnrag_badge"),
    )

    class ReportingSession(VendoredSession, NnragSession):
        """Vendored collection plus the main session's report and summary hooks."""

        def __init__(self) -> None:
            VendoredSession.__init__(self, folders)
            NnragSession.__init__(self, config, state)

        def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> None:
            return None  # no repos.json here: the vendored folders are added at collection

    return ReportingSession()


def pytest_unconfigure(config: pytest.Config) -> None:
    plugin = config.pluginmanager.get_plugin(SESSION_PLUGIN)
    if plugin is not None:
        plugin.close()
        config.pluginmanager.unregister(plugin)


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:  # the main nnrag plugin is disabled (-p no:nnrag)
        return None


class VendoredSession:
    """Adds the items of every vendored folder at collection."""

    def __init__(self, folders: list[Path]) -> None:
        self.folders = folders
        self._sandbox: Sandbox | None = None

    def sandbox(self, config: pytest.Config) -> Sandbox:
        """The one sandbox of this process's run: the main plugin's when it is active."""
        from pytest_nnrag.state import get_state

        state = get_state(config)
        if state is not None:
            return state.workspace.sandbox()
        if self._sandbox is None:
            from nnrag.validate.sandbox import Sandbox

            self._sandbox = Sandbox()
        return self._sandbox

    def close(self) -> None:
        """Stop this session's own sandbox, if it started one."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def pytest_report_header(self, config: pytest.Config) -> str:
        return "nnrag vendored: " + ", ".join(str(folder) for folder in self.folders)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Add the vendored blocks' items (before -k, --deselect and --lf select among them)."""
        depth: Stage = _option(config, "nnrag_depth") or "forward"
        timeout = float(_option(config, "nnrag_timeout") or 60.0)
        budget = float(_option(config, "nnrag_search_budget") or SEARCH_CPU_S)
        for folder in self.folders:
            node = VendoredFolder.from_parent(
                session,
                name=folder.name,
                path=folder,
                nodeid=_node_id(folder, config.rootpath),
                depth=depth,
                timeout_s=timeout,
                search_cpu_s=budget,
            )
            items.extend(session.genitems(node))


def _node_id(path: Path, rootpath: Path) -> str:
    try:
        return path.relative_to(rootpath).as_posix() or "."
    except ValueError:
        return path.name


def static_result(path: Path, *, block_id: str, depth: Stage) -> ValidationResult:
    """The parse/compile/closed/header part of validation, as a result (no sandbox)."""
    from nnrag.check.files import check_file
    from nnrag.model import STAGES, ValidationResult, stage_index
    from nnrag.report import format_diagnostic

    findings = check_file(path)
    if not findings:
        reached = depth if stage_index(depth) <= stage_index("closed") else "closed"
        return ValidationResult(
            block_id=block_id, depth=depth, stage_reached=reached, file=str(path)
        )
    first = min(findings, key=lambda f: stage_index(f.stage))
    before = stage_index(first.stage) - 1
    message = "\n".join(format_diagnostic(finding, path=str(path)) for finding in findings)
    return ValidationResult(
        block_id=block_id,
        depth=depth,
        stage_reached=STAGES[before] if before >= 0 else None,
        failed_stage=first.stage,
        category=first.category,
        message=message,
        file=str(path),
    )


# --------------------------------------------------------------------------- nodes


class VendoredFolder(pytest.Collector):
    """A folder of vendored blocks: one item per block file, sorted by file name."""

    def __init__(
        self, *, depth: Stage, timeout_s: float, search_cpu_s: float, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.depth = depth
        self.timeout_s = timeout_s
        self.search_cpu_s = search_cpu_s

    def collect(self) -> list[pytest.Item]:
        from nnrag.blockfile.header import parse_header
        from nnrag.vendor import read_manifest

        folder = self.path
        entries = read_manifest(folder)
        blocks: dict[str, str] = {entry.file: entry.id for entry in entries}
        if not entries:
            for path in sorted(folder.glob("*.py")):
                header = parse_header(path.read_text(encoding="utf-8", errors="replace"))
                if header is not None:
                    blocks[path.name] = header.block_id
        item = _item_class()
        return [
            item.from_parent(
                self,
                name=name,
                path=folder / name,
                block_id=block_id,
                depth=self.depth,
                timeout_s=self.timeout_s,
                search_cpu_s=self.search_cpu_s,
            )
            for name, block_id in sorted(blocks.items())
        ]

    def repr_failure(self, excinfo: Any) -> str:  # type: ignore[override]  # Collector's signature has no style
        from nnrag.errors import NnragError

        if isinstance(excinfo.value, NnragError):
            return f"nnrag could not collect {self.path}: {excinfo.value}"
        return str(super().repr_failure(excinfo))


def _item_class() -> type[ResultItem]:
    """The item class, built when collecting so that an inactive plugin imports nothing of nnrag.

    Not cached in the module: pytester's in-process runs re-import the plugin's modules, and a
    class kept from an earlier run would record results under that run's stash key.
    """
    from pytest_nnrag.items import ResultItem, hints_from_hook

    class VendoredItem(ResultItem):
        """One vendored block file: static checks, then the sandbox to the requested depth."""

        def __init__(
            self,
            *,
            block_id: str,
            depth: Stage,
            timeout_s: float,
            search_cpu_s: float,
            **kwargs: Any,
        ) -> None:
            super().__init__(**kwargs)
            self.block_id = block_id
            self.depth = depth
            self.timeout_s = timeout_s
            self.search_cpu_s = search_cpu_s
            self.add_marker("nnrag")

        def validate(self) -> ValidationResult:
            from nnrag.blockfile.header import parse_header
            from nnrag.model import stage_index

            result = static_result(self.path, block_id=self.block_id, depth=self.depth)
            if not result.passed and result.failed_stage is not None:
                return result
            if stage_index(self.depth) <= stage_index("closed"):
                return result
            from nnrag.validate.stages import validate_file

            header = parse_header(self.path.read_text(encoding="utf-8"))
            class_name = self.block_id.rsplit(":", 1)[-1]
            hook = getattr(self.ihook, "pytest_nnrag_block_inputs", None)
            answer = None
            if hook is not None:
                answer = hook(block_id=self.block_id, class_name=class_name, config=self.config)
            session = self.config.pluginmanager.get_plugin(SESSION_PLUGIN)
            return validate_file(
                self.path,
                block_id=self.block_id,
                class_name=class_name,
                depth=self.depth,
                timeout_s=self.timeout_s,
                search_cpu_s=self.search_cpu_s,
                hints=None if answer is None else hints_from_hook(self.block_id, answer),
                source_packages=frozenset(header.source_packages if header else ()),
                sandbox=None if session is None else session.sandbox(self.config),
            )

        def reportinfo(self) -> tuple[Path, int | None, str]:
            return self.path, None, f"[nnrag vendored] {self.block_id}"

    return VendoredItem
