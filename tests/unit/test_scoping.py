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


QUIET_BODIES = {
    "attribute_named_like_nothing": (
        """
        class C:
            def __init__(self, size):
                self.size = size

            def grow(self):
                return self.size + self.missing
        """,
        [],
        2,
    ),
    "self_documenting_fstring": (
        """
        def show():
            return f"{missing=}"
        """,
        [("NNR101", 3)],
        0,
    ),
    "read_after_keyword": (
        """
        import os

        def join(*parts):
            return os.path.join(*parts, sep=missing)
        """,
        [("NNR101", 5)],
        0,
    ),
    "class_hint_from_a_quiet_function": (
        """
        def make():
            class Inner:
                size = 3
            return Inner

        class C:
            def area(self):
                return size
        """,
        [("NNR101", 9)],
        1,
    ),
    "global_store_in_a_function": (
        """
        def setup():
            global ready
            ready = True

        def use():
            return ready
        """,
        [],
        None,
    ),
}


def _checked_piece_by_piece(code: str) -> tuple[list[Diagnostic], int]:
    """The check's way: pieces parsed and compiled alone, function bodies left out where the
    compiler's names allow; the issues and how many bodies were left out."""
    from nnrag.check.pieces import Compiled, compile_units, function_reads, parse_units

    compiled = Compiled()
    pieces = parse_units(code, "b.py", compiled)
    assert pieces is not None
    codes = compile_units(code, pieces, "b.py", compiled)
    assert codes is not None
    reads = function_reads(pieces, codes)
    quiet = 0

    def counted(top: int, node: ast.FunctionDef | ast.AsyncFunctionDef, known: object) -> bool:
        nonlocal quiet
        found = reads(top, node, known)  # type: ignore[arg-type]  # a set of names
        quiet += not found
        return found

    body = [node for _, _, nodes in pieces for node in nodes]
    deltas = [first - 1 for first, _, nodes in pieces if nodes]
    module = ast.Module(body=body, type_ignores=[])
    return unresolved_names(module, deltas=deltas, reads=counted), quiet


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_bodies_left_out_change_no_issue(name: str) -> None:
    code = textwrap.dedent(SNIPPETS[name])
    assert _checked_piece_by_piece(code)[0] == unresolved_names(ast.parse(code))


@pytest.mark.parametrize("name", sorted(QUIET_BODIES))
def test_bodies_the_compiler_clears_are_left_out(name: str) -> None:
    """A body is left out only when no name it may read (the compiler's names, spelled as
    names in its text: not ``.attr``, not ``keyword=``, but ``{x=}``) is unbound."""
    snippet, expected, quiet = QUIET_BODIES[name]
    code = textwrap.dedent(snippet)
    issues, left_out = _checked_piece_by_piece(code)
    assert issues == unresolved_names(ast.parse(code))
    assert [(d.code, d.line) for d in issues] == expected
    if quiet is not None:
        assert left_out == quiet
    if name == "class_hint_from_a_quiet_function":
        assert "use self.size or ClassName.size" in issues[0].message


def test_duplicate_statements_are_each_reported() -> None:
    issues = _issues(SNIPPETS["duplicate_statements"])
    assert [(d.code, d.line) for d in issues] == [("NNR101", 7), ("NNR101", 12)]


def test_agrees_with_the_symtable_based_view() -> None:
    """What symtable calls global in each function is what the check looks up (the oracle)."""
    from tests.scope_oracle import mismatches

    for code in SNIPPETS.values():
        assert mismatches(textwrap.dedent(code)) == []
