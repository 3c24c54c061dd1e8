"""The scope model against symtable on every .py file of the corpora the benchmarks use."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.scope_oracle import mismatches

CORPORA = Path(os.environ.get("NNRAG_CORPORA", "/work/corpora"))
DISTRIBUTIONS = ("timm", "torchvision", "torch-geometric")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        sys.version_info >= (3, 12), reason="the model follows the 3.10/3.11 compiler (PEP 709)"
    ),
]


@pytest.mark.parametrize("deferred", [False, True], ids=["walk", "deferred-bodies"])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_scope_model_agrees_with_symtable_on_corpus(distribution: str, deferred: bool) -> None:
    """``deferred``: the walk the check makes, the bodies of load-time defs last."""
    root = CORPORA / distribution / "unpacked"
    if not root.is_dir():
        pytest.skip(f"{root} is not unpacked (set NNRAG_CORPORA)")
    checked, problems = 0, []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8", errors="replace")
        try:
            compile(source, str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue  # symtable cannot read it either
        checked += 1
        problems += mismatches(source, str(path), deferred=deferred)
    assert checked > 100
    assert problems == []
