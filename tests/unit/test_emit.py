"""Tests for extract.emit / extract.rewrite with hand-built closures (independent of resolve)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from nnrag.blockfile.header import parse_header, split_header
from nnrag.errors import InternalError
from nnrag.extract.emit import _check_compiles, emit
from nnrag.extract.emit_header import external_requirements
from nnrag.extract.rewrite import KEEP_NAME_CHUNK, Rewrite, absolute_module, rewrite_unit
from nnrag.index.build import Index, index_tree
from nnrag.model import BlockRef, Closure, ImportBinding, UnitRef


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def closure_for(index: Index, target: str, wanted: list[tuple[str, str]]) -> Closure:
    """A closure of the units binding ``(module, name)`` in ``wanted`` order, plus every
    external import of those modules that is not inside a kept unit."""
    module, name = target.split(":")
    refs: list[UnitRef] = []
    imports: list[ImportBinding] = []
    used_modules: list[str] = []
    for mod, bound in wanted:
        info = index.module(mod)
        assert info is not None
        unit = next(u for u in info.units if bound in u.binds and u.kind != "import")
        refs.append(UnitRef(source="src", module=mod, index=unit.index))
        if mod not in used_modules:
            used_modules.append(mod)
    for mod in used_modules:
        info = index.module(mod)
        assert info is not None
        for unit in info.units:
            if unit.kind == "import":
                imports += [b for b in unit.imports if index.source_of_module(b.module) is None]
    info = index.module(module)
    assert info is not None
    block = BlockRef(source="src", module=module, name=name, path=info.path, line=1)
    return Closure(block=block, units=tuple(refs), imports=tuple(imports))


# --------------------------------------------------------------------------- rewrite_unit


def test_rename_touches_only_module_level_references() -> None:
    text = textwrap.dedent(
        """\
        class Mlp(Base):  # the class
            Mlp = Mlp
            def f(self, Mlp=Mlp, **kw):  # the default reads the class attribute
                x = self.Mlp + Mlp
                y = [Mlp for Mlp in range(3)]
                return make(Mlp=1), (lambda Mlp: Mlp)(2), z.Mlp
            def g(self):
                return Mlp()"""
    )
    out = rewrite_unit(
        text, Rewrite(load={"Mlp": "Mlp_2"}, call={"Mlp": "Mlp_2"}, defs={"Mlp": "Mlp_2"})
    )
    assert out == textwrap.dedent(
        """\
        @_nnrag_original_name("Mlp")
        class Mlp_2(Base):  # the class
            Mlp = Mlp_2
            def f(self, Mlp=Mlp, **kw):  # the default reads the class attribute
                x = self.Mlp + Mlp
                y = [Mlp for Mlp in range(3)]
                return make(Mlp=1), (lambda Mlp: Mlp)(2), z.Mlp
            def g(self):
                return Mlp_2()"""
    )


def test_chains_become_flat_names_and_globals_are_renamed() -> None:
    text = textwrap.dedent(
        """\
        def f(x):
            global _STATE
            _STATE = layers.Mlp(x)
            return (cd.f)(x) + layers.Other.attr + cd.g.h"""
    )
    out = rewrite_unit(
        text,
        Rewrite(
            call={"layers.Mlp": "Mlp", "cd.f": "f_2", "cd.g": "g"},
            defs={"_STATE": "_STATE_2"},
        ),
    )
    assert out == textwrap.dedent(
        """\
        def f(x):
            global _STATE_2
            _STATE_2 = Mlp(x)
            return (f_2)(x) + layers.Other.attr + g.h"""
    )


def test_load_and_call_time_reads_use_their_own_map() -> None:
    # `class LayerNorm(LayerNorm)`: the base is the import bound before the class,
    # the call-time read is the class itself.
    text = "class LayerNorm(LayerNorm):\n    def f(self):\n        return LayerNorm\n"
    out = rewrite_unit(
        text,
        Rewrite(load={"LayerNorm": "LayerNorm_2"}, call={}, defs={}),
    )
    assert out == "class LayerNorm(LayerNorm_2):\n    def f(self):\n        return LayerNorm\n"


def test_stringify_annotations_like_pep_563() -> None:
    text = textwrap.dedent(
        """\
        def f(x: Tensor, n: "int" = 1, *a: List[
                int], **k: Dict[str, int]) -> Optional[Tensor]:
            y: Tensor = x
            return y"""
    )
    out = rewrite_unit(text, Rewrite(), stringify_annotations=True)
    tree = ast.parse(out)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    annotations = [a.annotation for a in fn.args.args] + [fn.args.vararg.annotation]  # type: ignore[union-attr]  # the parsed test function has *args and **kwargs
    annotations += [fn.args.kwarg.annotation, fn.returns]  # type: ignore[union-attr]  # the parsed test function has *args and **kwargs
    values = [a.value for a in annotations if isinstance(a, ast.Constant)]
    assert values == ["Tensor", "'int'", "List[int]", "Dict[str, int]", "Optional[Tensor]"]


def test_internal_from_imports_inside_units() -> None:
    text = textwrap.dedent(
        """\
        try:
            from .fast import op
        except ImportError:
            op = None
        def f():
            from .helpers import a, b as c, ext
            from ..other import d
            return a, c, d, ext"""
    )
    rewrite = Rewrite(
        imported={
            ("pkg.sub.fast", "op"): "op_2",
            ("pkg.sub.helpers", "a"): "a",
            ("pkg.sub.helpers", "b"): "b",
            ("pkg.other", "d"): "d",
        },
        defs={"op": "op"},
        package="pkg.sub",
    )
    out = rewrite_unit(text, rewrite)
    assert out == textwrap.dedent(
        """\
        try:
            op = op_2
        except ImportError:
            op = None
        def f():
            from .helpers import ext; c = b
            pass
            return a, c, d, ext"""
    )


def test_absolute_module() -> None:
    assert absolute_module("a.b", 1, "c") == "a.b.c"
    assert absolute_module("a.b", 2, "c") == "a.c"
    assert absolute_module("a.b", 2, None) == "a"
    assert absolute_module("a.b", 0, "x.y") == "x.y"


# --------------------------------------------------------------------------- emit


@pytest.fixture
def two_mlps(tmp_path: Path) -> Index:
    write_tree(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/layers/__init__.py": "from .mlp import Mlp\n",
            "pkg/layers/mlp.py": """
                import torch.nn as nn
                from collections import OrderedDict


                class Mlp(nn.Module):
                    def forward(self, x):
                        return OrderedDict(x=x)
            """,
            "pkg/model.py": """
                import math
                import torch
                from torch import nn
                from pkg import layers


                class Mlp(nn.Module):
                    pass


                class Net(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.a = layers.Mlp()
                        self.b = Mlp()

                    def forward(self, x: torch.Tensor) -> torch.Tensor:
                        return self.a(x) * math.pi
            """,
        },
    )
    return index_tree(tmp_path / "src")


def test_emit_layout(two_mlps: Index) -> None:
    closure = closure_for(
        two_mlps,
        "pkg.model:Net",
        [("pkg.layers.mlp", "Mlp"), ("pkg.model", "Mlp"), ("pkg.model", "Net")],
    )
    extracted = emit(two_mlps, closure)
    header, body = split_header(extracted.code)
    assert body == textwrap.dedent(
        """\
        import math
        from collections import OrderedDict

        import torch
        from torch import nn


        <KEEP_NAME_CHUNK>


        # from pkg.layers.mlp
        class Mlp(nn.Module):
            def forward(self, x):
                return OrderedDict(x=x)


        # from pkg.model
        @_nnrag_original_name("Mlp")
        class Mlp_2(nn.Module):
            pass


        # from pkg.model
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = Mlp()
                self.b = Mlp_2()

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.a(x) * math.pi


        __all__ = ["Net"]
        """
    ).replace("<KEEP_NAME_CHUNK>\n", KEEP_NAME_CHUNK)
    parsed = parse_header(extracted.code)
    assert parsed is not None
    assert parsed.block_id == "src:pkg.model:Net"
    assert parsed.source.endswith(" (path)")
    assert parsed.source_packages == ("pkg",)
    assert [path for path, _ in parsed.files] == ["pkg/layers/mlp.py", "pkg/model.py"]
    assert parsed.requires == extracted.requirements
    assert [r.split(">=")[0] for r in extracted.requirements] == ["torch"]
    assert parsed.digest == extracted.digest
    assert extracted.dependencies == ("pkg.layers.mlp.Mlp", "pkg.model.Mlp")
    assert extracted.closed
    assert header.count("\n") == 15  # 10 key lines, then the 5-line PEP 723 script block


def test_renames_from_resolve_are_honoured_and_target_keeps_its_name(two_mlps: Index) -> None:
    closure = closure_for(
        two_mlps, "pkg.model:Mlp", [("pkg.layers.mlp", "Mlp"), ("pkg.model", "Mlp")]
    )
    closure = Closure(
        block=closure.block,
        units=closure.units,
        imports=closure.imports,
        renames={("pkg.layers.mlp", "Mlp"): "LayerMlp", ("pkg.model", "Mlp"): "Ignored"},
    )
    code = emit(two_mlps, closure).code
    assert "class LayerMlp(nn.Module):" in code
    assert "\nclass Mlp(nn.Module):" in code
    assert '__all__ = ["Mlp"]' in code


def test_future_annotations_all_vs_mixed(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": """
            from __future__ import annotations


            def helper(x: Tensor) -> Tensor:
                return x
        """,
        "pkg/b.py": """
            FUTURE
            from torch import nn


            class Net(nn.Module):
                def forward(self, x: Tensor):
                    return helper(x)
        """,
    }
    lazy = dict(
        files,
        **{"pkg/b.py": files["pkg/b.py"].replace("FUTURE", "from __future__ import annotations")},
    )
    index = index_tree(write_tree(tmp_path / "lazy", lazy))
    code = emit(
        index, closure_for(index, "pkg.b:Net", [("pkg.a", "helper"), ("pkg.b", "Net")])
    ).code
    body = split_header(code)[1]
    assert body.startswith("from __future__ import annotations\n\nfrom torch import nn\n")
    assert "def helper(x: Tensor) -> Tensor:" in body

    eager = dict(files, **{"pkg/b.py": files["pkg/b.py"].replace("FUTURE", "")})
    index = index_tree(write_tree(tmp_path / "eager", eager))
    code = emit(
        index, closure_for(index, "pkg.b:Net", [("pkg.a", "helper"), ("pkg.b", "Net")])
    ).code
    assert "__future__" not in code
    assert 'def helper(x: "Tensor") -> "Tensor":' in code
    assert "def forward(self, x: Tensor):" in code


def test_same_inputs_give_identical_bytes(two_mlps: Index, tmp_path: Path) -> None:
    wanted = [("pkg.layers.mlp", "Mlp"), ("pkg.model", "Mlp"), ("pkg.model", "Net")]
    first = emit(two_mlps, closure_for(two_mlps, "pkg.model:Net", wanted)).code
    again = index_tree(Path(next(iter(two_mlps.checkouts.values())).root))
    assert emit(again, closure_for(again, "pkg.model:Net", wanted)).code == first


def test_long_from_import_is_wrapped() -> None:
    from nnrag.extract.emit_cache import import_entity
    from nnrag.extract.emit_header import format_imports as _format_imports

    names = [f"name_number_{i}" for i in range(8)]
    bindings = [ImportBinding(name=n, module="somepkg.mod", attr=n) for n in names]
    text = _format_imports({import_entity(b): b for b in bindings}, {})
    assert text.startswith("from somepkg.mod import (\n    name_number_0,\n")
    assert text.endswith("    name_number_7,\n)\n")


def test_requirements() -> None:
    bindings = [
        ImportBinding(name="torch", module="torch", attr=None),
        ImportBinding(name="F", module="torch.nn.functional", attr=None),
        ImportBinding(name="math", module="math", attr=None),
        ImportBinding(name="x", module="surely_not_installed_pkg", attr="x"),
        ImportBinding(name="y", module="pkg", attr="y"),
    ]
    # distribution names; no bound where the source does not declare one (not the installed
    # version: the block is not tied to what happened to be installed where it was extracted)
    assert external_requirements(bindings, exclude=frozenset({"pkg"})) == (
        "surely_not_installed_pkg",
        "torch",
    )


def test_uncompilable_output_is_an_internal_error_with_evidence() -> None:
    with pytest.raises(InternalError) as info:
        _check_compiles("def broken(:\n", "src:pkg.mod:Broken")
    assert info.value.evidence is not None
    assert Path(info.value.evidence).read_text() == "def broken(:\n"
    assert "does not compile" in str(info.value)


def test_load_time_dependencies_come_first_even_if_the_closure_order_is_wrong(
    tmp_path: Path,
) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": "from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n",
        "pkg/model.py": "from .base import Base\n\n\nclass Net(Base):\n    pass\n",
    }
    index = index_tree(write_tree(tmp_path / "src", files))
    wrong = closure_for(index, "pkg.model:Net", [("pkg.model", "Net"), ("pkg.base", "Base")])
    body = split_header(emit(index, wrong).code)[1]
    assert body.index("class Base(") < body.index("class Net(")


def test_memos_shared_by_blocks_do_not_leak_renames(two_mlps: Index, tmp_path: Path) -> None:
    """One index, blocks that rename a unit's names differently, in turn: each file is the
    one a fresh index gives (the per-unit memos of emit are shared by every block)."""
    renamed = closure_for(
        two_mlps,
        "pkg.model:Net",
        [("pkg.layers.mlp", "Mlp"), ("pkg.model", "Mlp"), ("pkg.model", "Net")],
    )
    alone = closure_for(two_mlps, "pkg.model:Mlp", [("pkg.model", "Mlp")])
    layer = closure_for(two_mlps, "pkg.layers.mlp:Mlp", [("pkg.layers.mlp", "Mlp")])
    shared = [emit(two_mlps, c).code for c in (renamed, alone, layer, renamed, alone)]
    root = Path(two_mlps.checkouts["src"].root)
    fresh = [emit(index_tree(root), c).code for c in (renamed, alone, layer, renamed, alone)]
    assert shared == fresh
    assert "class Mlp_2(nn.Module):" in shared[0]
    assert "class Mlp_2" not in shared[1]
    assert "self.b = Mlp_2()" in shared[3]


def test_a_unit_reading_a_later_one_waits_for_it_instead_of_pulling_it_ahead() -> None:
    """Closure order ``[a, helper, b, user]`` where ``user`` (placed early by an earlier
    reader) must follow ``b``: emission moves the early reader after ``b``; it does not pull
    ``b`` ahead of ``helper`` (which ``b``'s functions call when ``b`` runs at load)."""
    from types import SimpleNamespace

    from nnrag.extract.emit_plan import load_order

    def unit(module: str, name: str, index: int) -> tuple[object, object]:
        return SimpleNamespace(source="s", module=module), SimpleNamespace(
            binds=(name,), index=index
        )

    reads = {"early": [("m", "b")], "b": []}
    units = [unit("m", "early", 0), unit("m", "helper", 1), unit("m", "b", 2), unit("m", "z", 3)]

    class Cache:
        def load_defs(self, symbols: object, info: object, u: SimpleNamespace) -> list[object]:
            return reads.get(u.binds[0], [])

    ordered = load_order(Cache(), None, units, set())  # type: ignore[arg-type]  # duck-typed cache and units: only load_defs and binds are read
    assert [u.binds[0] for _, u in ordered] == ["helper", "b", "early", "z"]  # type: ignore[attr-defined]  # the SimpleNamespace units above
