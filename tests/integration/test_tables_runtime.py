"""A block whose string table was cut behaves as its original for the keys it carries."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.test_cases import CASES_DIR, run_case

pytestmark = pytest.mark.integration


def _module(name: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_cut_string_table_block_matches_its_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    case = "resolve_string_table_entries"
    path = tmp_path / "nnrag_block.py"
    path.write_text(run_case(case).code, encoding="utf-8")
    block = _module("nnrag_block", path, monkeypatch)
    for name in [n for n in sys.modules if n == "pkg" or n.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(CASES_DIR / case / "src"))
    original = importlib.import_module("pkg.model")

    x = torch.randn(2, 8)
    for gate in ("silu", "relu", "gelu"):  # carried keys (a default, an external class, a word)
        torch.manual_seed(0)
        mine = block.MLP(gate=gate)
        torch.manual_seed(0)
        theirs = original.MLP(gate=gate)
        assert torch.equal(mine(x), theirs(x))
    config = block.Config(hidden_act="gelu-table")  # left out: the original builds it
    with pytest.raises(KeyError, match="gelu-table"):
        block.MLP(config=config)
    original.MLP(config=original.Config(hidden_act="gelu-table"))
