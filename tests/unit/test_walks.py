"""The one-walk helpers of extraction agree with the ``ast.walk`` definitions they replace."""

from __future__ import annotations

import ast
from pathlib import Path

from nnrag.extract import lookups
from nnrag.extract.lookups import read_chains, spelled
from nnrag.extract.syntax import nodes
from nnrag.pyscope.scopes import dotted

_SAMPLE = '''
import json
from typing import List

@register("name", 1)
class A(Base, metaclass=Meta):
    """A docstring."""
    table = {"key": f"x{y}", "two words": 1}

    def f(self, x: List[int]) -> "Ret":
        return json.dumps(self.a.b, cls=X.y.z) + getattr(other, "g")(x[0].h)

    @property
    def g(cls):
        lambda q: q.r
        return [s.t for s in cls.u if isinstance(s, (B, C.D))]
'''


def _walked(tree: ast.AST) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]


def test_nodes_are_the_nodes_of_ast_walk_but_contexts() -> None:
    for text in (_SAMPLE, Path(lookups.__file__).read_text(encoding="utf-8")):
        tree = ast.parse(text)
        assert sorted(map(id, nodes(tree))) == sorted(map(id, _walked(tree)))


def test_nodes_see_a_parent_before_its_children() -> None:
    seen: set[int] = set()
    tree = ast.parse(_SAMPLE)
    for node in nodes(tree):
        seen.add(id(node))
        assert all(id(child) not in seen for child in ast.iter_child_nodes(node))


def test_spelled_matches_the_walks_it_replaces() -> None:
    for statement in ast.parse(_SAMPLE).body:
        found = spelled(statement)
        walked = _walked(statement)
        assert found.names == {n.id for n in walked if isinstance(n, ast.Name)}
        assert found.attributes == {
            (dotted(n.value), n.attr) for n in walked if isinstance(n, ast.Attribute)
        }
        assert found.words == {
            n.value
            for n in walked
            if isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and 0 < len(n.value) <= 80
            and not any(c.isspace() for c in n.value)
        }
        chains = {dotted(n) for n in walked if isinstance(n, (ast.Name, ast.Attribute))}
        assert read_chains([statement]) == chains - {None}


def test_the_lookup_pre_check_passes_only_calls_on_the_class_itself() -> None:
    def may(text: str) -> bool:
        node = ast.parse(text).body[0]
        assert isinstance(node, ast.ClassDef)
        return lookups._may_look_up(node)

    assert not may("class A:\n    def f(self, m):\n        return getattr(m, 'x', 1)\n")
    assert not may("class A:\n    def f(self):\n        return hasattr(self.m, 'x')\n")
    assert may("class A:\n    def f(self, n):\n        return getattr(self, n)\n")
    assert may("class A:\n    def f(self, n):\n        return inspect.getmembers(A)\n")
    assert may("class A:\n    def f(self, n):\n        return getattr(type(self), n)\n")
    assert may("class A:\n    def f(self):\n        return type(self).__dict__\n")
    assert may("class A:\n    def __getattribute__(self, n):\n        return 1\n")
