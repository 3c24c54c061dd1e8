"""Tests for nnrag.index.units: one file's units, bindings, reads, imports and classes."""

from __future__ import annotations

import symtable
import textwrap
from pathlib import Path

import pytest

from nnrag.index.units import analyze_module, module_name_for
from nnrag.model import Diagnostic, ImportBinding, ModuleInfo, Unit
from nnrag.sources.scan import git_blob_sha1


def analyze(code: str, *, module: str = "pkg.mod", is_package: bool = False) -> ModuleInfo:
    data = textwrap.dedent(code).encode()
    info = analyze_module(
        source="src", module=module, path="pkg/mod.py", data=data, is_package=is_package
    )
    assert isinstance(info, ModuleInfo), info
    return info


def unit(info: ModuleInfo, name: str) -> Unit:
    """The unit that binds ``name``."""
    found = [u for u in info.units if name in u.binds]
    assert len(found) == 1, found
    return found[0]


def reads(code: str, name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    u = unit(analyze(code), name)
    return u.load_reads, u.call_reads


# --------------------------------------------------------------------------- helpers


def test_git_blob_sha1_matches_git() -> None:
    # `printf 'hello\n' | git hash-object --stdin`
    assert git_blob_sha1(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert git_blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_module_name_for(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "mod.py").write_text("")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.py").write_text("")
    assert module_name_for(pkg / "sub" / "mod.py", tmp_path) == ("pkg.sub.mod", False)
    assert module_name_for(pkg / "__init__.py", tmp_path) == ("pkg", True)
    assert module_name_for(pkg / "sub" / "__init__.py", tmp_path) == ("pkg.sub", True)
    # a folder without __init__.py is a namespace package from the root (yolov5 models/)
    assert module_name_for(tmp_path / "scripts" / "run.py", tmp_path) == ("scripts.run", False)


def test_module_name_for_root_that_is_a_package(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (tmp_path / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text("")
    # the walk stops at the root folder (included when it is a package itself)
    assert module_name_for(pkg / "m.py", pkg) == ("pkg.m", False)


def test_module_name_for_namespace_folders_inside_a_package(tmp_path: Path) -> None:
    """Python imports a folder without ``__init__.py`` inside a package as a namespace
    subpackage of it (fair-esm's ``esm/esmfold/v1``), with the root a package or not; one
    above every package stays outside the name (the ``src/`` layout)."""
    esm = tmp_path / "src" / "esm"
    (esm / "fold" / "v1").mkdir(parents=True)
    (esm / "__init__.py").write_text("")
    (esm / "fold" / "v1" / "__init__.py").write_text("")
    for file in (esm / "fold" / "v1" / "misc.py", esm / "fold" / "loose.py"):
        file.write_text("")
    v1 = esm / "fold" / "v1"
    assert module_name_for(v1 / "misc.py", tmp_path) == ("esm.fold.v1.misc", False)
    assert module_name_for(v1 / "__init__.py", tmp_path) == ("esm.fold.v1", True)
    assert module_name_for(esm / "fold" / "loose.py", tmp_path) == ("esm.fold.loose", False)
    assert module_name_for(v1 / "misc.py", esm) == ("esm.fold.v1.misc", False)


# --------------------------------------------------------------------------- units and lines


def test_units_line_ranges_with_decorators_and_comments() -> None:
    info = analyze(
        """\
        import torch

        # about f
        # more about f
        @decorator(1)
        @other
        def f():
            return 1
        x = 1  # trailing
        # about y, directly above
        y = 2

        # separated from z by a blank line: not part of z

        z = (
            3
        )
        """
    )
    f, x, y, z = unit(info, "f"), unit(info, "x"), unit(info, "y"), unit(info, "z")
    assert (f.kind, f.start_line, f.end_line) == ("def", 3, 8)
    assert (x.start_line, x.end_line) == (9, 9)
    assert (y.start_line, y.end_line) == (10, 11)
    assert (z.start_line, z.end_line) == (15, 17)
    assert [u.index for u in info.units] == list(range(len(info.units)))
    assert info.lines == 17


def test_unit_kinds() -> None:
    info = analyze(
        '''\
        """Module docstring."""
        import a
        from b import c
        x = 1
        x += 1
        y: int = 2
        def f(): pass
        async def g(): pass
        class C: pass
        if a: pass
        try: pass
        except E: pass
        with a: pass
        for i in a: pass
        while a: pass
        print(x)
        '''
    )
    kinds = [u.kind for u in info.units]
    assert kinds == [
        "other",
        "import",
        "import",
        "assign",
        "assign",
        "assign",
        "def",
        "def",
        "class",
        "if",
        "try",
        "with",
        "other",
        "other",
        "other",
    ]


def test_statements_sharing_a_line_form_one_unit() -> None:
    info = analyze("import a; b = a.x\nc = 1\n")
    assert len(info.units) == 2
    first = info.units[0]
    assert first.binds == ("a", "b")
    assert (first.start_line, first.end_line) == (1, 1)


def test_coding_cookie_and_shebang_do_not_attach() -> None:
    info = analyze("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nimport os\n")
    assert info.units[0].start_line == 3
    info = analyze("# Decoding helpers\nimport os\n")
    assert info.units[0].start_line == 1


# --------------------------------------------------------------------------- binds


def test_binds() -> None:
    info = analyze(
        """\
        a, (b, *c) = d = 1, (2, 3)
        import x.y.z
        import p.q as r
        from m import n as o, s
        if cond:
            t = 1
        else:
            from u import v
        try:
            import w
        except ImportError as err:
            w = None
        with open(f) as (fh, gh):
            k = 1
        for i, j in pairs:
            pass
        (walrus := 5)
        [comp_walrus := e for e in range(3)]
        ann: int = 3
        only_annotated: int
        class K: pass
        async def coro(): pass
        match cmd:
            case [first, *rest]:
                pass
            case {"key": value, **others}:
                pass
            case Point(x=px) as point:
                pass
        """
    )
    binds = {name for u in info.units for name in u.binds}
    assert binds == {
        "a", "b", "c", "d", "x", "r", "o", "s", "t", "v", "w", "err", "fh", "gh", "k",
        "i", "j", "walrus", "comp_walrus", "ann", "K", "coro", "first", "rest", "value",
        "others", "px", "point",
    }  # fmt: skip
    assert "only_annotated" not in binds


def test_global_in_function_binds_module_name() -> None:
    info = analyze(
        """\
        def setup():
            global CACHE, READ_ONLY
            CACHE = {}
            def inner():
                global INNER
                INNER = 1
            return READ_ONLY
        """
    )
    u = unit(info, "setup")
    assert u.binds == ("CACHE", "INNER", "setup")
    assert u.call_reads == ("READ_ONLY",)


# --------------------------------------------------------------------------- reads


def test_module_level_reads_are_load_time() -> None:
    load, call = reads("x = torch.nn.functional.relu(y)[0].shape\n", "x")
    assert load == ("torch.nn.functional.relu", "y")
    assert call == ()


def test_function_reads_are_call_time_and_signature_is_load_time() -> None:
    load, call = reads(
        """\
        @register_model(name=NAME)
        def f(a: Tensor, b=DEFAULT, *args: Any, c: int = K, **kw: Dict) -> Out:
            local = helper(a)
            return nn.functional.relu(local) + len(args) + b
        """,
        "f",
    )
    assert load == ("Any", "DEFAULT", "Dict", "K", "NAME", "Out", "Tensor", "int", "register_model")
    assert call == ("helper", "len", "nn.functional.relu")


def test_future_annotations_are_not_read() -> None:
    code = """\
        from __future__ import annotations
        def f(a: Tensor, b: int = 1) -> Out:
            x: Local = 1
            return x
        y: Ann = 2
        class C:
            field: Field = dflt
        """
    info = analyze(code)
    assert info.future == ("annotations",)
    # never evaluated: kept as call-time reads so the emitted file stays statically closed
    assert unit(info, "f").load_reads == ()
    assert unit(info, "f").call_reads == ("Local", "Out", "Tensor", "int")
    assert unit(info, "y").load_reads == ()
    assert unit(info, "y").call_reads == ("Ann",)
    assert unit(info, "C").load_reads == ("dflt",)
    assert unit(info, "C").call_reads == ("Field",)


def test_annotations_without_future_are_load_time() -> None:
    info = analyze(
        """\
        y: Ann = 2
        def f():
            x: LocalAnnotation = 1
            return x
        class C:
            field: Field = dataclasses.field(default_factory=list)
        """
    )
    assert unit(info, "y").load_reads == ("Ann",)
    assert unit(info, "f").load_reads == ()
    assert unit(info, "f").call_reads == ("LocalAnnotation",)  # never evaluated
    assert unit(info, "C").load_reads == ("Field", "dataclasses.field", "list")


def test_class_scoping() -> None:
    load, call = reads(
        """\
        @dataclass
        class Net(nn.Module, Generic[T], metaclass=Meta):
            act = nn.GELU
            size = size            # read before the class binds it: global
            doubled = size * 2     # now class-local
            items = [act for _ in range(n)]   # class names invisible in the body
            first = [x for x in act]          # ...but visible in the first iterable
            def forward(self, x, a=act, b=DEFAULT):
                return act(x) + self.act(x) + Net.helper(x) + super().forward(x)
            class Inner:
                value = act        # nested class body cannot see Net's names
        """,
        "Net",
    )
    assert load == (
        "DEFAULT", "Generic", "Meta", "T", "act", "dataclass", "n", "nn.GELU", "nn.Module",
        "range", "size",
    )  # fmt: skip
    assert call == ("Net.helper", "act", "super")


def test_class_info() -> None:
    info = analyze(
        '''\
        class Block(layers.Base, Generic[T], make_base(), metaclass=abc.ABCMeta):
            """Doc of Block."""
            def __init__(self, dim: int, heads=8, *, drop=0.0, **kw):
                pass
            def forward(self, x, mask=None):
                return x
            @abc.abstractmethod
            def extra(self): ...
            @property
            @abstractmethod
            def prop(self): ...
            alias = forward
            other = lambda self: 1
        try:
            class Fallback(nn.Module):
                pass
        except ImportError:
            Fallback = None
        '''
    )
    (info_block,) = unit(info, "Block").classes
    assert info_block.name == "Block"
    assert info_block.bases == ("layers.Base", "Generic", "")
    assert info_block.metaclass == "abc.ABCMeta"
    assert info_block.methods == ("__init__", "forward", "extra", "prop", "alias", "other")
    assert info_block.abstract_methods == ("extra", "prop")
    assert info_block.docstring == "Doc of Block."
    assert info_block.init_signature == "dim: int, heads=8, *, drop=0.0, **kw"
    assert info_block.forward_signature == "x, mask=None"
    assert info_block.line == 1
    (fallback,) = unit(info, "Fallback").classes
    assert (fallback.bases, fallback.metaclass, fallback.init_signature) == (
        ("nn.Module",),
        None,
        None,
    )


def test_only_top_level_classes_get_class_info() -> None:
    info = analyze(
        """\
        if flag:
            class A(Base):
                class Nested:
                    pass
        def f():
            class Local:
                pass
        """
    )
    assert [c.name for u in info.units for c in u.classes] == ["A"]


def test_signature_when_every_positional_has_a_default() -> None:
    info = analyze("class A:\n    def __init__(self=None, b=1):\n        pass\n")
    assert unit(info, "A").classes[0].init_signature == "b=1"


def test_function_scoping_locals_free_and_globals() -> None:
    load, call = reads(
        """\
        def outer(p):
            a = 1
            def inner():
                nonlocal a
                a = a + b + p
                return later + GLOBAL_NAME
            later = 2
            del gone
            return [y for y in p if y > threshold] + [lambda q: q + a + z for z in range(3)]
        """,
        "outer",
    )
    assert load == ()
    assert call == ("GLOBAL_NAME", "b", "range", "threshold")


def test_async_nonlocal_and_reads_sorted_and_deduplicated() -> None:
    load, call = reads(
        """\
        async def run(items):
            total = 0
            async def add(x):
                nonlocal total
                total += await convert(x)
            async with lock:
                async for item in aiter(items):
                    await add(item)
                    await convert(item)
            return total, zzz, aaa.b, aaa.b, aaa
        """,
        "run",
    )
    assert load == ()
    assert call == ("aaa", "aaa.b", "aiter", "convert", "lock", "zzz")


def test_global_declared_read_in_function() -> None:
    _, call = reads(
        """\
        def f():
            global counter
            counter += 1
            return counter
        """,
        "f",
    )
    assert call == ("counter",)


def test_lambda_defaults_are_load_time() -> None:
    load, call = reads("f = lambda x, y=DEFAULT: g(x) + y\n", "f")
    assert load == ("DEFAULT",)
    assert call == ("g",)


def test_comprehensions_at_module_level_are_load_time() -> None:
    load, call = reads("out = {k: v(i) for i in items for k in i if cond(k)}\n", "out")
    assert load == ("cond", "items", "v")
    assert call == ()


def test_walrus_in_comprehension_binds_enclosing_function() -> None:
    _, call = reads(
        """\
        def f(xs):
            if any((hit := x) > LIMIT for x in xs):
                return hit
        """,
        "f",
    )
    assert call == ("LIMIT", "any")


def test_type_aliases() -> None:
    info = analyze(
        """\
        from typing import Optional, TypeAlias, Union
        OptTensor = Optional[Tensor]
        Pair: TypeAlias = Union[int, "Tuple[int, int]"]
        """
    )
    assert unit(info, "OptTensor").load_reads == ("Optional", "Tensor")
    pair = unit(info, "Pair")
    assert (pair.kind, pair.load_reads) == ("assign", ("TypeAlias", "Union", "int"))


def test_module_level_del_reads_the_name() -> None:
    info = analyze("x = 1\ndel x\n")
    assert info.units[1].load_reads == ("x",)
    assert info.units[1].binds == ()


def test_attribute_store_reads_the_object() -> None:
    load, _ = reads("import torch\ntorch.backends.flag = value\nvalue = 1\n", "torch")
    assert load == ()
    info = analyze("torch.backends.flag = value\n")
    assert info.units[0].load_reads == ("torch.backends", "value")


def test_match_statement() -> None:
    info = analyze(
        """\
        match command:
            case Point(x=0) | Color.RED:
                found = x
            case [first, *_] if first > LIMIT:
                found = first
        """
    )
    u = info.units[0]
    assert u.binds == ("first", "found")
    assert u.load_reads == ("Color.RED", "LIMIT", "Point", "command", "first", "x")


def test_except_handler_and_try() -> None:
    u = analyze(
        """\
        try:
            import fast
        except (ImportError, errors.Missing) as exc:
            fast = fallback(exc)
        """
    ).units[0]
    assert u.binds == ("exc", "fast")
    assert u.load_reads == ("ImportError", "errors.Missing", "exc", "fallback")


def test_class_defined_in_a_function_reads_at_call_time() -> None:
    load, call = reads(
        """\
        def factory(base):
            class Local(base, Mixin):
                attr = CONST
                def m(self):
                    return base
            return Local
        """,
        "factory",
    )
    assert load == ()
    assert call == ("CONST", "Mixin")


def test_class_body_sees_enclosing_function_names() -> None:
    _, call = reads(
        """\
        def factory():
            x = 1
            class Local:
                y = x
                z = w
            return Local
        """,
        "factory",
    )
    assert call == ("w",)


def _symtable_view(code: str) -> tuple[set[str], set[str]]:
    """(global reads outside the module scope, module names bound) per the compiler."""
    reads: set[str] = set()
    binds: set[str] = set()

    def walk(table: symtable.SymbolTable) -> None:
        for s in table.get_symbols():
            if table.get_type() == "module":
                if s.is_assigned() or s.is_imported():
                    binds.add(s.get_name())
            else:
                if s.is_global() and s.is_referenced():
                    reads.add(s.get_name())
                if s.is_declared_global() and s.is_assigned():
                    binds.add(s.get_name())
        for child in table.get_children():
            walk(child)

    walk(symtable.symtable(code, "m.py", "exec"))
    return reads, binds


SCOPING_CASES = {
    "nested": """\
        import os
        X = 1
        def f(a, *b, **c):
            global G
            G = 1
            d = [e for e in a if e]
            def g():
                nonlocal d
                d = d + [X, os.sep, H]
            class K:
                y = d
                def m(self):
                    return y
            return lambda k=1: k + b + Q
        """,
    "class_comprehensions": """\
        def f():
            class C:
                a = 1
                b = [a for _ in range(2)]
                c = [x for x in [a]]
                d = {k: a for k in {a}}
            return C
        """,
    "walrus": """\
        def f(xs):
            ys = [last := x for x in xs if (seen := x)]
            return last, seen, ys, [z for z in xs if (w := z)], w
        """,
    "lambdas": """\
        def f(a):
            g = lambda b, c=a: lambda d: a + b + c + d + e
            return g
        """,
    "match_and_handlers": """\
        def f(cmd):
            try:
                match cmd:
                    case Point(x=px) | [px, *_] if px > LIMIT:
                        return px
                    case {"k": v, **rest}:
                        return v, rest
            except (ValueError, Err) as exc:
                return exc
        """,
    "global_and_del": """\
        def f():
            global A, B
            A = 1
            del B
            local = 2
            del local
            return C
        """,
    "async": """\
        async def f(s):
            async with s as conn:
                async for row in conn:
                    yield await row.fetch(TIMEOUT)
        """,
    "class_in_class": """\
        def f(z):
            class Outer:
                x = 1
                class Inner:
                    y = z
                    def m(self):
                        return x, y, z, __class__
            return Outer
        """,
}


@pytest.mark.parametrize("name", sorted(SCOPING_CASES))
def test_scoping_matches_symtable(name: str) -> None:
    """Function-scope global reads and module binds agree with the compiler's symbol tables."""
    code = textwrap.dedent(SCOPING_CASES[name])
    info = analyze(code)
    reads = {chain.split(".")[0] for u in info.units for chain in u.call_reads}
    binds = {b for u in info.units for b in u.binds}
    assert (reads, binds) == _symtable_view(code)


# --------------------------------------------------------------------------- imports


def test_imports_and_relative_resolution() -> None:
    info = analyze(
        """\
        import torch.nn.functional as F
        import os.path
        from . import sibling
        from .layers import Mlp as Block
        from ..top import thing
        from ... import too_high
        from .star import *
        """,
        module="pkg.sub.mod",
    )
    imports = [b for u in info.units for b in u.imports]
    assert imports == [
        ImportBinding(name="F", module="torch.nn.functional", attr=None, line=1),
        ImportBinding(name="os", module="os.path", attr=None, line=2),
        ImportBinding(name="sibling", module="pkg.sub", attr="sibling", level=1, line=3),
        ImportBinding(name="Block", module="pkg.sub.layers", attr="Mlp", level=1, line=4),
        ImportBinding(name="thing", module="pkg.top", attr="thing", level=2, line=5),
        ImportBinding(name="too_high", module=".", attr="too_high", level=3, line=6),
        ImportBinding(name="*", module="pkg.sub.star", attr="*", level=1, line=7),
    ]
    assert info.star_imports == ("pkg.sub.star",)


def test_assigns_are_the_names_bound_otherwise_than_by_import() -> None:
    info = analyze(
        """\
        if FLAG:
            from .a import X, Y
            for Z in ():
                pass
        else:
            Y = None
            def X(): ...
        import os
        """,
        is_package=True,
    )
    first, second = info.units
    assert (first.binds, first.assigns) == (("X", "Y", "Z"), ("X", "Y", "Z"))
    assert (second.binds, second.assigns) == (("os",), ())
    only_imports = analyze("if FLAG:\n    from .a import X\nelse:\n    import sys\n")
    assert (only_imports.units[0].binds, only_imports.units[0].assigns) == (("X", "sys"), ())


def test_relative_import_in_package_init() -> None:
    info = analyze("from .core import A\nfrom .. import B\n", module="pkg.sub", is_package=True)
    modules = [b.module for u in info.units for b in u.imports]
    assert modules == ["pkg.sub.core", "pkg"]


def test_conditional_and_type_checking_imports() -> None:
    info = analyze(
        """\
        from typing import TYPE_CHECKING
        import typing
        if TYPE_CHECKING:
            from heavy import Thing
        else:
            Thing = None
        if typing.TYPE_CHECKING:
            import other
        try:
            from fast import impl
        except ImportError:
            from slow import impl
        with suppress(ImportError):
            import maybe
        def f():
            import local_only
            return local_only
        """
    )
    by_name = {b.name: b for u in info.units for b in u.imports}
    assert by_name["TYPE_CHECKING"].conditional is False
    assert (by_name["Thing"].conditional, by_name["Thing"].type_checking) == (True, True)
    assert by_name["other"].type_checking is True
    assert (by_name["impl"].conditional, by_name["impl"].type_checking) == (True, False)
    assert by_name["maybe"].conditional is True
    assert "local_only" not in by_name
    tc_units = [u for u in info.units if u.type_checking]
    assert [u.start_line for u in tc_units] == [7]  # line 3 has an ``else`` that runs
    assert unit(info, "f").call_reads == ()


def test_local_imports_are_recorded_separately() -> None:
    info = analyze(
        """\
        def build():
            from .fast_norm import rms_norm
            import torch.nn.functional as F
            return rms_norm, F
        class K:
            from ..base import Mixin
        """,
        module="pkg.sub.mod",
    )
    build = unit(info, "build")
    assert build.imports == ()
    assert build.binds == ("build",)
    assert build.call_reads == ()
    assert build.local_imports == (
        ImportBinding(
            name="rms_norm", module="pkg.sub.fast_norm", attr="rms_norm", level=1, line=2
        ),
        ImportBinding(name="F", module="torch.nn.functional", attr=None, line=3),
    )
    assert unit(info, "K").local_imports == (
        ImportBinding(name="Mixin", module="pkg.base", attr="Mixin", level=2, line=6),
    )


def test_chains_through_local_imports_are_local_reads() -> None:
    info = analyze(
        """\
        def resolver(query):
            import pkg.aggr as aggr
            from pkg import functional as F
            if query:
                return aggr.Multi(query)
            found = [aggr for aggr in vars(aggr).values()]
            def inner():
                return F.resize.__name__
            return found, inner
        def other():
            import pkg.aggr
            aggr = 1
            return pkg.aggr.Sum, aggr
        class K:
            import pkg.layers as layers
            conv = layers.Conv
        """
    )
    assert unit(info, "resolver").local_reads == (
        ("F.resize.__name__", 3),
        ("aggr", 2),
        ("aggr.Multi", 2),
    )
    assert unit(info, "resolver").call_reads == ("vars",)
    assert unit(info, "other").local_reads == (("pkg.aggr.Sum", 11),)
    assert unit(info, "K").local_reads == (("layers.Conv", 15),)


def test_negated_type_checking() -> None:
    info = analyze(
        """\
        if not TYPE_CHECKING:
            import runtime
        else:
            import static
        """
    )
    (u,) = info.units
    assert u.type_checking is False
    by_name = {b.name: b for b in u.imports}
    assert (by_name["runtime"].type_checking, by_name["static"].type_checking) == (False, True)


def test_relative_import_in_a_top_level_module_keeps_its_dots() -> None:
    info = analyze("from . import x\nfrom .y import z\n", module="script")
    assert [b.module for u in info.units for b in u.imports] == [".", ".y"]


# --------------------------------------------------------------------------- __all__


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("__all__ = ['a', 'b']\n", ("a", "b")),
        ("__all__ = ('a',)\n__all__ += ['b']\n__all__.extend(['c'])\n__all__.append('d')\n",
         ("a", "b", "c", "d")),
        ("__all__ = ['a'] + ['b']\n", ("a", "b")),
        ("__all__ = ['a']\n__all__ = __all__ + ['b']\n", ("a", "b")),
        ("__all__: list[str] = ['a']\n", ("a",)),
        ("__all__ = [name for name in dir()]\n", None),
        ("__all__ = ['a']\n__all__ += other.__all__\n", None),
        ("x = 1\n", None),
    ],
)  # fmt: skip
def test_all_names(code: str, expected: tuple[str, ...] | None) -> None:
    assert analyze(code).all_names == expected


# --------------------------------------------------------------------------- bad files


def test_syntax_error_is_a_file_problem() -> None:
    result = analyze_module(
        source="src", module="m", path="m.py", data=b"x = 1\ndef f(:\n", is_package=False
    )
    assert isinstance(result, Diagnostic)
    assert (result.path, result.line, result.col) == ("m.py", 2, 7)
    assert "syntax error" in result.message


def test_undecodable_bytes_are_a_file_problem() -> None:
    result = analyze_module(
        source="src", module="m", path="m.py", data=b"x = 1\ny = '\xff\xfe'\n", is_package=False
    )
    assert isinstance(result, Diagnostic)
    assert (result.line, result.col) == (2, 6)
    assert "utf-8" in result.message


def test_undecodable_first_line_is_located() -> None:
    result = analyze_module(
        source="src", module="m", path="m.py", data=b"x = '\xff'\n", is_package=False
    )
    assert isinstance(result, Diagnostic)
    assert (result.line, result.col) == (1, 6)
    assert "utf-8" in result.message


def test_unknown_encoding_is_a_file_problem() -> None:
    result = analyze_module(
        source="src", module="m", path="m.py", data=b"# coding: nope\nx = 1\n", is_package=False
    )
    assert isinstance(result, Diagnostic)
    assert result.line == 1


def test_pep263_latin1_and_bom() -> None:
    latin = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1")
    info = analyze_module(source="s", module="m", path="m.py", data=latin, is_package=False)
    assert isinstance(info, ModuleInfo)
    assert info.units[0].binds == ("name",)
    assert info.sha1 == git_blob_sha1(latin)
    bom = b"\xef\xbb\xbfimport os\n"
    info = analyze_module(source="s", module="m", path="m.py", data=bom, is_package=False)
    assert isinstance(info, ModuleInfo)
    assert info.units[0].binds == ("os",)


def test_null_bytes_are_a_file_problem() -> None:
    result = analyze_module(
        source="s", module="m", path="m.py", data=b"x = 1\ny = 2\0\n", is_package=False
    )
    assert isinstance(result, Diagnostic)
    assert (result.line, result.col) == (2, 6)


def test_deeply_nested_concatenation_is_analyzed() -> None:
    code = "x = " + " + ".join(f"n{i}" for i in range(1500)) + "\n"
    info = analyze(code)
    assert len(info.units[0].load_reads) == 1500


def test_deeply_nested_calls_are_analyzed() -> None:
    code = "x = " + "f(" * 150 + "-" * 700 + "y" + ")" * 150 + "\n"
    info = analyze(code)
    assert info.units[0].load_reads == ("f", "y")


def test_module_info_fields() -> None:
    data = b"import os\n"
    info = analyze_module(
        source="s", module="pkg", path="pkg/__init__.py", data=data, is_package=True
    )
    assert isinstance(info, ModuleInfo)
    assert (info.source, info.module, info.path, info.is_package, info.lines) == (
        "s",
        "pkg",
        "pkg/__init__.py",
        True,
        1,
    )
    assert info.swhid == f"swh:1:cnt:{git_blob_sha1(data)}"


def test_annotation_only_reads() -> None:
    """Reads only in annotations Python never evaluates are listed apart (still call reads)."""
    info = analyze(
        """\
        from __future__ import annotations
        def f(x: Tensor, n: Count = Default) -> Result:
            local: Hidden = compute()
            return Result
        class C:
            field: Spec
        """
    )
    f, c = info.units[1], info.units[2]
    assert f.annotation_reads == ("Count", "Hidden", "Tensor")
    assert set(f.call_reads) >= {"Count", "Hidden", "Tensor", "Result", "compute"}
    assert f.load_reads == ("Default",)
    assert c.annotation_reads == ("Spec",)


def test_local_annotations_are_never_evaluated() -> None:
    info = analyze(
        """\
        def f(x: Tensor):
            local: Hidden = 1
            return x
        """
    )
    assert info.units[0].annotation_reads == ("Hidden",)
    assert info.units[0].load_reads == ("Tensor",)


def test_names_a_function_rebinds_at_run_time_are_marked() -> None:
    info = analyze(
        """
        FLAG = False

        def set_flag(mode):
            global FLAG, LATE
            FLAG = mode
            LATE = mode

        class Scoped:
            global FLAG
            FLAG = True  # a class body runs with the module
        """
    )
    setter = unit(info, "set_flag")
    assert setter.binds == ("FLAG", "LATE", "set_flag")
    assert setter.rebinds == ("FLAG", "LATE")
    scoped = unit(info, "Scoped")
    assert scoped.rebinds == ()
    assert "FLAG" in scoped.binds


@pytest.mark.parametrize(
    ("statement", "computed"),
    [
        ("for n in names:\n    globals()[n] = make(n)", True),
        ("for n in names:\n    locals()[n] = make(n)", True),
        ("globals().update({n: make(n) for n in names})", True),
        ("vars()[name] = 1", True),
        ("setattr(sys.modules[__name__], name, 1)", True),
        # a function binds only when called, which its module may never do
        ("def add(n):\n    globals()[n] = make(n)", False),
        ("class Net:\n    def __init__(self):\n        globals()['self.bias'] = 0", False),
        ("def add(n):\n    locals()[n] = make(n)", False),  # the function's own locals
        ("table[name] = 1", False),
        ("found = globals()[name]", False),  # a read
    ],
)
def test_statements_that_bind_names_by_computed_keys_are_marked(
    statement: str, computed: bool
) -> None:
    import ast

    from nnrag.pyscope.bindings import binds_computed_names

    assert binds_computed_names(ast.parse(statement).body[0]) is computed
