"""Exact free-name resolution: the symbol-table shortcut changes the work, never the issues."""

from __future__ import annotations

import ast
import symtable
import textwrap

import pytest

from nnrag.model import Diagnostic
from nnrag.pyscope.scoping import _NameChecker, unresolved_names

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


def _issues(code: str, *, shortcut: bool) -> list[Diagnostic]:
    code = textwrap.dedent(code)
    return unresolved_names(
        ast.parse(code), symtable.symtable(code, "b.py", "exec"), shortcut=shortcut
    )


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_shortcut_gives_the_same_issues(name: str) -> None:
    assert _issues(SNIPPETS[name], shortcut=True) == _issues(SNIPPETS[name], shortcut=False)


@pytest.mark.parametrize(
    ("name", "walks"),
    [
        ("closed", False),
        ("class_in_function", False),
        ("global_declared_in_function", False),
        ("undefined_in_method", True),
        ("class_attribute_in_method", True),
        ("deleted_before_call", True),
        ("type_checking_only", True),
        ("star_import", True),
        ("closures_and_lambdas", True),
    ],
)
def test_bodies_are_walked_only_when_a_call_time_read_may_be_unresolved(
    name: str, walks: bool
) -> None:
    code = textwrap.dedent(SNIPPETS[name])
    checker = _NameChecker(ast.parse(code), symtable.symtable(code, "b.py", "exec"))
    checker.run()
    assert checker.walk_bodies is walks


def test_expected_issues_with_the_shortcut() -> None:
    assert _issues(SNIPPETS["closed"], shortcut=True) == []
    assert [(d.code, d.line) for d in _issues(SNIPPETS["closures_and_lambdas"], shortcut=True)] == [
        ("NNR101", 8),
        ("NNR101", 10),
    ]
    assert [(d.code, d.line) for d in _issues(SNIPPETS["import_time_order"], shortcut=True)] == [
        ("NNR102", 2),
        ("NNR101", 7),
    ]


def test_function_named_top_keeps_its_locals() -> None:
    """Python 3.11's ``Symbol.is_global`` calls the locals of a function named ``top`` global."""
    issues = _issues(SNIPPETS["function_named_top"], shortcut=False)
    assert [(d.code, d.line, d.message.split(":")[0]) for d in issues] == [
        ("NNR101", 7, "undefined name 'undefined_name'")
    ]


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_statement_tables_give_the_same_issues(name: str) -> None:
    """The tables of each top-level statement compiled alone (shared between files) stand in
    for the module's table."""
    from nnrag.check.pieces import Compiled, compile_units, parse_units, statement_units

    code = textwrap.dedent(SNIPPETS[name])
    tree = ast.parse(code)
    table = symtable.symtable(code, "b.py", "exec")
    compiled = Compiled()
    units = statement_units(code, tree)
    assert units is not None
    parts = compile_units(code, units, "b.py", compiled, relative=False)
    assert parts is not None
    expected = unresolved_names(tree, table, shortcut=False)
    for shortcut in (True, False):
        assert unresolved_names(tree, table, shortcut=shortcut, parts=parts) == expected
    again = compile_units(code, units, "b.py", compiled, relative=False)
    assert unresolved_names(tree, table, parts=again) == expected
    # the trees too parsed piece by piece, their lines counted from each piece
    pieces = parse_units(code, "b.py", compiled)
    assert pieces is not None
    relative = compile_units(code, pieces, "b.py", compiled, relative=True)
    assert relative is not None
    body = [node for _, _, nodes in pieces for node in nodes]
    deltas = [first - 1 for first, _, nodes in pieces if nodes]
    assert [n.lineno + d for n, d in zip(body, deltas, strict=True)] == [
        n.lineno for n in tree.body
    ]
    module = ast.Module(body=body, type_ignores=[])
    assert unresolved_names(module, table, parts=relative, deltas=deltas) == expected


def test_duplicate_statements_are_each_reported() -> None:
    issues = _issues(SNIPPETS["duplicate_statements"], shortcut=True)
    assert [(d.code, d.line) for d in issues] == [("NNR101", 7), ("NNR101", 12)]
