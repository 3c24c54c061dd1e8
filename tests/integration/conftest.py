"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nnrag.validate.sandbox import Sandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One warm sandbox per test module (test_sandbox.py defines a locked-down variant)."""
    with Sandbox() as box:
        yield box
