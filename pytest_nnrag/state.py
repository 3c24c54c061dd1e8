"""Per-process plugin state, kept in ``config.stash``: settings, the workspace and results."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from nnrag.baseline import Baseline
    from nnrag.model import IndexStats, Settings, ValidationResult
    from nnrag.workspace import Workspace
    from pytest_nnrag.options import Order


@dataclass(kw_only=True)
class NnragState:
    """What the active plugin knows in one process (the controller or one xdist worker)."""

    settings: Settings
    repos_file: Path
    report_path: Path | None = None
    badge_path: Path | None = None
    dedup: bool = False
    """--nnrag-dedup: add the de-duplication figures to the report and summary."""
    results: dict[str, ValidationResult] = field(default_factory=dict)
    """Results seen in this process's reports, by block id (the controller's are complete)."""
    block_categories: dict[str, str] = field(default_factory=dict)
    """Block id -> the block's category (``Workspace.category``), from the reports."""
    source_failures: dict[str, str] = field(default_factory=dict)
    """Failed source-level items (node id -> first line of the message)."""
    unfetched: dict[str, int] = field(default_factory=dict)
    """Sources that could not be fetched -> the failed items each counts as in the pass rate."""
    baseline: Baseline | None = None
    """--nnrag-baseline: expected results (judged against unless update_baseline)."""
    update_baseline: bool = False
    strict: bool = False
    """A new pass against an expected failure fails (xfail strict)."""
    shard: tuple[int, int, tuple[str, ...]] | None = None
    """--nnrag-shard K/N: (K, N, the shard's sources); settings hold only those sources."""
    order: Order = "cost"
    """--nnrag-order: block items slow first (cost), by name, or slow last (reverse)."""
    durations: dict[str, float] | None = None
    """The xdist controller's one reading of the recorded durations, sent to every worker."""
    verdicts: dict[str, str] = field(default_factory=dict)
    """Block id -> its verdict against the baseline (:data:`nnrag.baseline.Verdict`)."""
    problem_ids: set[str] = field(default_factory=set)
    """Source-level problems that ran (``source:<parse-errors>``), for the baseline."""
    sandbox_layers: dict[str, bool] | None = None
    """The kernel isolation layers blocks ran under (from the reports), once known."""
    written: list[Path] = field(default_factory=list)
    index_stats: IndexStats | None = None
    """What building the index did in this process (set where repos.json is collected)."""
    repos_collected: bool = False
    """The repos.json collector ran in this process (met by the walk, or added)."""
    harvest_pass: frozenset[str] = frozenset()
    """Blocks this session's harvest pass ran (their results are this session's, not cached)."""
    _workspace: Workspace | None = None

    @property
    def judging(self) -> bool:
        """Blocks are judged against a baseline (one is given, and not being rewritten)."""
        return self.baseline is not None and not self.update_baseline

    @property
    def workspace(self) -> Workspace:
        """The process's Workspace, created on first use."""
        if self._workspace is None:
            from nnrag.workspace import Workspace

            self._workspace = Workspace(self.settings)
        return self._workspace

    def close(self) -> None:
        """Release what the workspace holds (its sandbox), if it was ever created."""
        close = getattr(self._workspace, "close", None)
        if callable(close):
            close()
        self._workspace = None


STATE_KEY = pytest.StashKey[NnragState]()


def get_state(config: pytest.Config) -> NnragState | None:
    """The plugin state, or ``None`` when nnrag is not active (no ``--nnrag-repos``)."""
    return config.stash.get(STATE_KEY, None)


def require_state(config: pytest.Config, what: str) -> NnragState:
    """The plugin state; fails the calling test with the fix when nnrag is not active."""
    state = get_state(config)
    if state is None:
        pytest.fail(
            f"{what} needs nnrag to be active: pass --nnrag-repos PATH "
            "(or set the ini option nnrag_repos)",
            pytrace=False,
        )
    return state
