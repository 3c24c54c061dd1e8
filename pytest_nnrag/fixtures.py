"""Session fixtures that expose nnrag's library to users' own tests (need ``--nnrag-repos``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from pytest_nnrag.state import require_state

if TYPE_CHECKING:
    from nnrag.index.build import Index
    from nnrag.model import BlockHints, BlockRef, Extracted, Replay, Stage, ValidationResult
    from nnrag.workspace import Workspace

    Extract = Callable[[str | BlockRef], Extracted]
    Validate = Callable[..., ValidationResult]


@pytest.fixture(scope="session")
def nnrag_workspace(pytestconfig: pytest.Config) -> Workspace:
    """The session's :class:`nnrag.workspace.Workspace` (settings from ``--nnrag-*``)."""
    return require_state(pytestconfig, "the nnrag_workspace fixture").workspace


@pytest.fixture(scope="session")
def nnrag_index(nnrag_workspace: Workspace) -> Index:
    """The up-to-date, read-only :class:`nnrag.index.build.Index` of the configured sources."""
    return nnrag_workspace.index()


@pytest.fixture(scope="session")
def nnrag_extract(nnrag_workspace: Workspace) -> Extract:
    """``nnrag_extract("timm:timm.layers.mlp:Mlp")`` -> :class:`nnrag.model.Extracted`."""
    return nnrag_workspace.extract


@pytest.fixture(scope="session")
def nnrag_validate(nnrag_workspace: Workspace) -> Validate:
    """``nnrag_validate(block_id, depth="backward", hints=None)`` -> ValidationResult.

    Uses the result cache like the collected block tests do.
    """

    def validate(
        query: str | BlockRef, *, depth: Stage | None = None, hints: BlockHints | None = None
    ) -> ValidationResult:
        return nnrag_workspace.validate(query, depth=depth, hints=hints)

    return validate


@pytest.fixture(scope="session")
def nnrag_replay(nnrag_workspace: Workspace) -> Callable[[str | BlockRef], Replay]:
    """``nnrag_replay(block_id)`` -> :class:`nnrag.model.Replay`: the block rebuilt and rerun
    from its recorded recipe; ``.reproduced`` says whether the outcome is the same::

        def test_attention_recipe_replays(nnrag_replay):
            replay = nnrag_replay("timm:timm.layers.attention:Attention")
            assert replay.reproduced, replay.differences
    """
    return nnrag_workspace.replay
