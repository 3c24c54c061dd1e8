"""The one scope model (nnrag.pyscope.scopes) against symtable and on hand-made cases."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from nnrag.pyscope.scopes import (
    CALL,
    CELL,
    FREE,
    GLOBAL_EXPLICIT,
    GLOBAL_IMPLICIT,
    LAZY,
    LOAD,
    LOCAL,
    Access,
    Assignment,
    Scope,
    build_scopes,
    dotted,
    dotted_root,
)
from tests.scope_oracle import mismatches

CASES = sorted((Path(__file__).parent / "scope_cases").glob("*.py"))
needs_311 = pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="the model follows the 3.10/3.11 compiler (PEP 709)"
)


@needs_311
@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_model_agrees_with_symtable_on_tricky_files(path: Path) -> None:
    assert mismatches(path.read_text(encoding="utf-8"), str(path)) == []


@needs_311
@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_deferred_bodies_agree_with_symtable(path: Path) -> None:
    """Bodies of load-time defs walked last (``build_scopes(bodies=...)``): the same model."""
    assert mismatches(path.read_text(encoding="utf-8"), str(path), deferred=True) == []


def _scope(source: str, *names: str) -> Scope:
    scope = build_scopes(ast.parse(source)).module
    for name in names:
        scope = next(child for child in scope.children if child.name == name)
    return scope


def _accesses(source: str) -> dict[str, list[Access]]:
    found: dict[str, list[Access]] = {}
    for access in build_scopes(ast.parse(source)).accesses():
        found.setdefault(access.chain, []).append(access)
    return found


def test_classification_values() -> None:
    source = (
        "import os\n"
        "def f(a):\n"
        "    global g\n"
        "    b = 1\n"
        "    def h():\n"
        "        return a, b, os\n"
        "    return h\n"
    )
    f = _scope(source, "f")
    assert f.symbols == {"g": GLOBAL_EXPLICIT, "a": CELL, "b": CELL, "h": LOCAL}
    assert _scope(source, "f", "h").symbols == {"a": FREE, "b": FREE, "os": GLOBAL_IMPLICIT}


def test_class_body_reads_see_earlier_bindings_only() -> None:
    source = (
        "x = 1\nclass A:\n    y = x\n    x = 2\n    z = x\n    def m(self):\n        return x\n"
    )
    tree = build_scopes(ast.parse(source))
    reads = [a for a in tree.accesses() if a.name == "x"]
    module = tree.module
    klass = module.children[0]
    assert [a.target for a in reads] == [module, klass, module]
    assert [a.time for a in reads] == [LOAD, LOAD, CALL]
    assert klass.symbols["x"] == LOCAL  # the compiler's view: bound in the body


def test_comprehension_walrus_binds_in_the_enclosing_function() -> None:
    source = "def f(xs):\n    out = [y for x in xs if (y := x)]\n    return y\n"
    tree = build_scopes(ast.parse(source))
    f = tree.module.children[0]
    assert [a.kind for a in f.assignments["y"]] == ["walrus"]
    comprehension = f.children[0]
    assert comprehension.symbols["y"] == FREE
    assert f.symbols["y"] == CELL
    reads = [a for a in tree.accesses() if a.name == "y"]
    assert [a.target for a in reads] == [f, f]


def test_global_declaration_binds_at_module_level() -> None:
    source = "def f():\n    global counter\n    counter = 1\n"
    tree = build_scopes(ast.parse(source))
    (assignment,) = tree.module.assignments["counter"]
    assert assignment.lexical.name == "f"
    assert assignment.kind == "store"
    assert tree.binds_module_name(assignment.node)


def test_chains_times_and_annotations() -> None:
    source = (
        "from __future__ import annotations\n"
        "import torch.nn as nn\n"
        "Base = nn.Module\n"
        "def f(x: nn.Tensor) -> None:\n"
        "    nn.functional.relu(x)\n"
        "    x.y = nn.init\n"
    )
    reads = _accesses(source)
    assert reads["nn.Module"][0].time == LOAD
    assert reads["nn.Tensor"][0].annotation == LAZY
    assert reads["nn.functional.relu"][0].time == CALL
    assert reads["x"][0].chain == "x"  # a store to x.y reads x
    assert all(a.target is not None and a.target.kind == "module" for a in reads["nn.init"])


def test_super_uses_the_class_cell() -> None:
    method = _scope("class A:\n    def m(self):\n        return super().m()\n", "A", "m")
    assert method.symbols["__class__"] == FREE


def test_imports_and_star() -> None:
    tree = build_scopes(ast.parse("from m import *\nimport a.b\ndef f():\n    from x import y\n"))
    assert [(i.name, i.scope.kind) for i in tree.imports] == [
        ("*", "module"),
        ("a", "module"),
        ("y", "function"),
    ]
    assert all(isinstance(i, Assignment) for i in tree.imports)


def test_dotted() -> None:
    expr = ast.parse("a.b.c", mode="eval").body
    assert dotted(expr) == "a.b.c"
    found = dotted_root(expr)
    assert found is not None
    assert found[1].id == "a"
    assert dotted(ast.parse("f().x", mode="eval").body) is None
    assert dotted(ast.parse("a[0].x", mode="eval").body) is None


def test_reads_and_accesses_agree() -> None:
    source = (
        "import os\n"
        "x = 1\n"
        "class A:\n"
        "    y = x\n"
        "    x: int\n"
        "    z = x\n"
        "    x = 2\n"
        "    w = [x for _ in os.sep]\n"
        "    def m(self, a=x):\n"
        "        from json import dumps\n"
        "        return dumps(a), __class__, super()\n"
    )
    tree = build_scopes(ast.parse(source))
    module = tree.module
    klass = module.children[0]
    method = klass.children[1]
    for scope in tree.scopes():
        assert len(scope.reads) == len(scope.accesses)
        for read, access in zip(scope.reads, scope.accesses, strict=True):
            assert (read[0], read[1], read[2], read[3]) == (
                access.name,
                access.chain,
                access.node,
                access.order,
            )
            assert access.target is scope.target(read)
    in_class = [(a.chain, a.target) for a in klass.accesses]
    # ``x: int`` binds nothing at run time: the second read of x still sees the module's;
    # the default ``a=x`` runs in the body after ``x = 2``
    assert in_class == [
        ("x", module),
        ("int", module),
        ("x", module),
        ("os.sep", module),
        ("x", klass),
    ]
    comprehension = klass.children[0]
    assert [a.target for a in comprehension.accesses] == [module]  # class names are invisible
    in_method = {a.name: a.target for a in method.accesses}
    assert in_method == {"dumps": method, "a": method, "__class__": klass, "super": module}
