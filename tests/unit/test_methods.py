"""Per-method reachability helpers: dropping methods from a class chunk, plain classes."""

from __future__ import annotations

import ast

from nnrag.extract.methods import _looks_itself_up, _prunable, drop_methods


def _class(text: str) -> ast.ClassDef:
    node = ast.parse(text).body[0]
    assert isinstance(node, ast.ClassDef)
    return node


def test_drop_methods_removes_defs_decorators_and_their_blank_lines() -> None:
    chunk = (
        "# from pkg.m\n"
        "class A:\n"
        "    x = 1\n"
        "\n"
        "    @property\n"
        "    def size(self):\n"
        "        return 1\n"
        "\n"
        "    def keep(self):\n"
        "        return 2\n"
    )
    result = drop_methods(chunk, frozenset({"size"}))
    assert result == "# from pkg.m\nclass A:\n    x = 1\n\n    def keep(self):\n        return 2\n"
    compile(result, "<chunk>", "exec")


def test_drop_every_method_leaves_pass() -> None:
    chunk = (
        "class A:\n    def one(self):\n        return 1\n\n    def two(self):\n        return 2\n"
    )
    result = drop_methods(chunk, frozenset({"one", "two"}))
    assert result == "class A:\n    pass\n"
    namespace: dict[str, object] = {}
    exec(compile(result, "<chunk>", "exec"), namespace)
    assert isinstance(namespace["A"], type)


def test_drop_methods_keeps_a_chunk_that_does_not_parse() -> None:
    chunk = "class A:\n    def one(self):\n  return 1\n"
    assert drop_methods(chunk, frozenset({"one"})) == chunk


def test_prunable_methods_exclude_dunders_sunders_abstract_and_registering_decorators() -> None:
    node = _class(
        "class A:\n"
        "    def __call__(self): pass\n"
        "    def _missing_(self): pass\n"
        "    @abc.abstractmethod\n"
        "    def must(self): pass\n"
        "    @hooks.register('x')\n"
        "    def hooked(self): pass\n"
        "    @staticmethod\n"
        "    def plain(): pass\n"
        "    @size.setter\n"
        "    def size(self, v): pass\n"
    )
    names = {stmt.name for stmt in node.body if _prunable(stmt)}  # type: ignore[attr-defined]  # every statement of the class is a def
    assert names == {"plain", "size"}


def test_a_class_that_looks_its_own_attributes_up_is_not_plain() -> None:
    assert _looks_itself_up(
        _class("class A:\n    def f(self, n):\n        return getattr(self, n)\n")
    )
    assert _looks_itself_up(_class("class A:\n    def f(self):\n        return dir(self)\n"))
    assert _looks_itself_up(
        _class("class A:\n    def f(self, n):\n        return getattr(type(self), n)\n")
    )
    assert not _looks_itself_up(
        _class("class A:\n    def f(self):\n        return getattr(self, 'g')()\n")
    )
    assert not _looks_itself_up(
        _class("class A:\n    def f(self, other, n):\n        return getattr(other, n)\n")
    )


def test_type_tests_are_chains_read_only_by_isinstance_or_in_annotations() -> None:
    from nnrag.extract.syntax import type_tests

    tree = ast.parse(
        "def f(x: Config, y: 'Other') -> Union[Box, None]:\n"
        "    if isinstance(x, (Tested, mod.Deep)) or issubclass(type(x), Sub):\n"
        "        return Built(x)\n"
        "    return isinstance(x, Built)\n"
    )
    # a parameter annotation (Config) is what callers build: not a type test
    assert type_tests(tree) == frozenset({"Union", "Box", "Tested", "mod.Deep", "Sub"})
    fields = ast.parse(
        "class Cfg:\n    stem: StemCfg\n\ndef f():\n    local: Local = make()\n    return local\n"
    )
    # a class-body annotation is a field (dataclass, NamedTuple): built, not a type test
    assert type_tests(fields) == frozenset({"Local"})
