"""Code fingerprints: every part named in a cache key exists, and a change to it changes the key."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import nnrag
from nnrag.versions import ANALYSIS_CODE, EXTRACTION_CODE, VALIDATION_CODE, code_fingerprint

PACKAGE = Path(nnrag.__file__).parent


def fingerprint_calls() -> list[tuple[str, str]]:
    """(file, part) for every string literal passed to ``code_fingerprint`` in nnrag."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "code_fingerprint"
            ):
                found += [
                    (path.name, arg.value)
                    for arg in node.args
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                ]
    return found


def test_every_named_part_exists() -> None:
    calls = fingerprint_calls()
    assert calls  # the literal parts of build.py and search.py
    for part in {p for _, p in calls} | {*ANALYSIS_CODE, *EXTRACTION_CODE, *VALIDATION_CODE}:
        assert (PACKAGE / part).exists(), part


def test_a_missing_part_is_an_error() -> None:
    with pytest.raises(ValueError, match="nnrag/discover does not exist"):
        code_fingerprint("discover")


def test_subpackage_fingerprint_covers_its_modules() -> None:
    assert code_fingerprint("index") != code_fingerprint("index/build.py")
    assert code_fingerprint("index") == code_fingerprint("index")
