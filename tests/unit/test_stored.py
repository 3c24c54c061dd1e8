"""Functions only stored in an attribute (nnrag.extract.stored)."""

from __future__ import annotations

import ast
import textwrap

from nnrag.extract.stored import init_keeps, loaded_attributes, stored_names


def _init(text: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(text)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


INIT = _init(
    """
    def __init__(self, name, build_func=None, *, hook=None):
        self.name = name
        if build_func is None:
            build_func = default
        self.build_func = build_func
        if hook is not None:
            self.hook = hook
    """
)


def test_a_constructor_keeps_a_parameter_it_only_stores_and_tests_against_none() -> None:
    assert init_keeps(INIT, "hook") == "hook"
    assert init_keeps(INIT, 0) == "name"  # by position after self
    assert init_keeps(INIT, "build_func") is None  # rebound: not the argument any more
    assert init_keeps(INIT, "missing") is None
    assert init_keeps(INIT, 5) is None
    called = _init("def __init__(self, f):\n    self.f = f\n    f()\n")
    assert init_keeps(called, "f") is None


def test_names_stored_whole_in_one_attribute_and_nowhere_else() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            def setup(self):
                self.fn = stored
                self.other = both
                both()
                self.a = two
                self.b = two
            R("x", keep, hook=hooked)
            R("x", called, hook=passed)
            """
        )
    )

    def keeps(callee: str, parameter: str | int) -> str | None:
        return {("R", 1): None, ("R", "hook"): "hook"}.get((callee, parameter))

    found = stored_names(tree, keeps)
    assert found == {"stored": "fn", "hooked": "hook", "passed": "hook"}


def test_loaded_attributes_are_loads_and_words_but_not_copies() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            self.build_func = self.parent.build_func
            self.written = 1
            x = obj.read
            getattr(obj, "quoted")
            """
        )
    )
    found = loaded_attributes([tree])
    assert {"read", "quoted", "parent"} <= found
    assert "build_func" not in found
    assert "written" not in found
