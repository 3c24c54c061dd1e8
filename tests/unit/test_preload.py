"""Which modules of a block file the warm server may preload (static, no process)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nnrag.validate.frames import Message
from nnrag.validate.preload import _clean_modules, top_level_imports, wanted


def test_top_level_imports_are_the_absolute_ones_at_the_top_in_order() -> None:
    code = """
import a.b
from c.d import e, f
from . import local
from .pkg import thing
try:
    import g
except ImportError:
    g = None
import a.b as again

def later():
    import h

class K:
    import i
"""
    assert top_level_imports(code) == ["a.b", "c.d", "g"]


def test_only_the_part_before_the_first_definition_is_read() -> None:
    code = "import a\n\n@decorate\ndef f():\n    pass\n\nimport b\n"
    assert top_level_imports(code) == ["a"]
    assert top_level_imports("import a\nclass K:\n    pass\nimport b\n") == ["a"]


def test_a_file_that_does_not_parse_imports_nothing() -> None:
    assert top_level_imports("import a\nfrom (:\n") == []


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An installed third-party package nobody imported yet."""
    package = tmp_path / "nnrag_unit_preload_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "sub.py").write_text("VALUE = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return package.name


def test_wanted_is_installed_third_party_not_loaded_not_own(
    installed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = f"""
from __future__ import annotations
import os
import json.decoder
import nnrag_unit_surely_not_installed
import {installed}.sub
from {installed} import VALUE
"""
    assert wanted(code, source_packages=()) == [f"{installed}.sub", installed]
    assert wanted(code, source_packages=(installed,)) == []
    assert wanted(code, source_packages=(), decided={installed}) == [f"{installed}.sub"]
    monkeypatch.setitem(sys.modules, installed, sys.modules["os"])
    assert wanted(code, source_packages=()) == [f"{installed}.sub"]


def test_only_the_modules_before_the_first_unclean_one_are_clean() -> None:
    def trial(*flags: bool) -> list[Message]:
        found: list[Message] = [
            {"kind": "preload", "module": f"m{i}", "clean": flag} for i, flag in enumerate(flags)
        ]
        return [*found, {"kind": "result"}]

    assert _clean_modules(trial(True, True)) == ["m0", "m1"]
    assert _clean_modules(trial(True, False, True)) == ["m0"]
    assert _clean_modules(trial(True)[:-1]) == []  # no result: the trial died or timed out
    refused: Message = {"kind": "refused", "message": "socket", "probe": True}
    assert _clean_modules([refused, *trial(True)]) == []
