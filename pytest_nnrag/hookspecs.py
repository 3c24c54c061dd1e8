"""Hook specifications the nnrag plugin adds to pytest (registered through ``pytest_addhooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from nnrag.model import ValidationResult


@pytest.hookspec(firstresult=True)
def pytest_nnrag_block_inputs(
    block_id: str, class_name: str, config: pytest.Config
) -> dict[str, Any] | None:
    """Give exact constructor arguments and forward inputs for one block.

    Return ``None`` to leave the block to nnrag's probing, or a dict with any of
    ``args`` (constructor positional arguments), ``kwargs`` (constructor keyword
    arguments), ``inputs`` (forward positional inputs) and ``input_kwargs`` (forward
    keyword inputs). Values are JSON values; a tensor is written as a spec
    ``{"shape": [1, 3, 32, 32], "dtype": "float32"}``. Hook results win over the
    ``hints`` of repos.json. The first non-``None`` result is used::

        # conftest.py
        def pytest_nnrag_block_inputs(block_id, class_name, config):
            if class_name == "Mlp":
                return {"kwargs": {"in_features": 8}, "inputs": [{"shape": [2, 8]}]}
            return None
    """


def pytest_nnrag_result(item: pytest.Item, result: ValidationResult) -> None:
    """Called on the worker after each block was validated (cached or not), before the
    outcome is reported. Use it to record extra data about a block, e.g. in
    ``item.user_properties``."""
