"""A process that runs a workspace collects its old generation rarely."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from nnrag.workspace import FULL_COLLECTION_EVERY, collect_rarely


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    yield saved
    gc.set_threshold(*saved)


def test_full_collections_wait_for_more_young_ones(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 10, 10)
    collect_rarely()
    assert gc.get_threshold() == (700, 10, FULL_COLLECTION_EVERY)


def test_a_rarer_setting_is_kept(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 10, 10 * FULL_COLLECTION_EVERY)
    collect_rarely()
    assert gc.get_threshold() == (700, 10, 10 * FULL_COLLECTION_EVERY)
