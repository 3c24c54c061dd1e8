"""Exact free-name resolution of block files (NNR101-NNR105) on the scope model."""

from __future__ import annotations

import ast
import textwrap

import pytest

from nnrag.model import Diagnostic
from nnrag.pyscope.scoping import unresolved_names

SNIPPETS = {
    "closed": """
        import math

        def area(r):
            return math.pi * r * r

        class Circle:
            scale = 2

            def grow(self, k):
                return [self.scale * k for _ in range(3)]
    """,
    "undefined_in_method": """
        class A:
            def f(self):
                return helper(self) + len(self.x)
    """,
    "class_attribute_in_method": """
        class A:
            limit = 3

            def f(self):
                return limit
    """,
    "class_in_function": """
        def make():
            class Local:
                size = 4
                double = size * 2

                def get(self):
                    return self.size
            return Local
    """,
    "global_declared_in_function": """
        def setup():
            global CONFIG
            CONFIG = {}

        def use():
            return CONFIG
    """,
    "deleted_before_call": """
        import os

        def f():
            return os.sep

        del os
    """,
    "type_checking_only": """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from collections import OrderedDict

        def f():
            return OrderedDict()
    """,
    "star_import": """
        from os.path import *

        def f(p):
            return join(p, "x")
    """,
    "closures_and_lambdas": """
        def outer(a):
            b = 2

            def inner(c):
                nonlocal b
                b += c
                return a + b + missing

            key = lambda item: item[a] + other
            return inner, key
    """,
    "import_time_order": """
        value = later + 1

        def later():
            return 0

        class B(Base):
            pass
    """,
    "duplicate_statements": """
        from __future__ import annotations


        class A:
            def f(self) -> Missing:
                return [lambda: gone for _ in range(2)]


        class A:
            def f(self) -> Missing:
                return [lambda: gone for _ in range(2)]
    """,
    "function_named_top": """
        class Pop:
            def top(self, which, howmuch):
                return self.cmd(which, howmuch)

        def g():
            return undefined_name
    """,
}


def _issues(code: str) -> list[Diagnostic]:
    return unresolved_names(ast.parse(textwrap.dedent(code)))


def test_expected_issues() -> None:
    assert _issues(SNIPPETS["closed"]) == []
    assert [(d.code, d.line) for d in _issues(SNIPPETS["closures_and_lambdas"])] == [
        ("NNR101", 8),
        ("NNR101", 10),
    ]
    assert [(d.code, d.line) for d in _issues(SNIPPETS["import_time_order"])] == [
        ("NNR102", 2),
        ("NNR101", 7),
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("closed", []),
        ("class_in_function", []),
        ("global_declared_in_function", []),
        ("undefined_in_method", [("NNR101", 4)]),
        ("class_attribute_in_method", [("NNR101", 6)]),
        ("deleted_before_call", [("NNR102", 5)]),
        ("type_checking_only", [("NNR105", 8)]),
        ("star_import", [("NNR103", 2)]),
    ],
)
def test_issues_per_snippet(name: str, expected: list[tuple[str, int]]) -> None:
    assert [(d.code, d.line) for d in _issues(SNIPPETS[name])] == expected


def test_class_attribute_hint() -> None:
    (issue,) = _issues(SNIPPETS["class_attribute_in_method"])
    assert "use self.limit or ClassName.limit" in issue.message


def test_function_named_top_keeps_its_locals() -> None:
    """Python 3.11's ``Symbol.is_global`` called the locals of a function named ``top`` global."""
    issues = _issues(SNIPPETS["function_named_top"])
    assert [(d.code, d.line, d.message.split(":")[0]) for d in issues] == [
        ("NNR101", 7, "undefined name 'undefined_name'")
    ]


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_trees_parsed_piece_by_piece_give_the_same_issues(name: str) -> None:
    """Each top-level statement parsed alone (lines counted from its piece), with ``deltas``."""
    from nnrag.check.pieces import Compiled, parse_units

    code = textwrap.dedent(SNIPPETS[name])
    tree = ast.parse(code)
    expected = unresolved_names(tree)
    pieces = parse_units(code, "b.py", Compiled())
    assert pieces is not None
    body = [node for _, _, nodes in pieces for node in nodes]
    deltas = [first - 1 for first, _, nodes in pieces if nodes]
    assert [n.lineno + d for n, d in zip(body, deltas, strict=True)] == [
        n.lineno for n in tree.body
    ]
    module = ast.Module(body=body, type_ignores=[])
    assert unresolved_names(module, deltas=deltas) == expected


def test_duplicate_statements_are_each_reported() -> None:
    issues = _issues(SNIPPETS["duplicate_statements"])
    assert [(d.code, d.line) for d in issues] == [("NNR101", 7), ("NNR101", 12)]


def test_agrees_with_the_symtable_based_view() -> None:
    """What symtable calls global in each function is what the check looks up (the oracle)."""
    from tests.scope_oracle import mismatches

    for code in SNIPPETS.values():
        assert mismatches(textwrap.dedent(code)) == []
