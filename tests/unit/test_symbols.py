"""Cross-module name lookup: what a chain read in a module denotes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.index.build import Index, index_tree
from nnrag.index.symbols import Resolution, Symbols, symbols_for
from nnrag.model import ModuleInfo


def tree(root: Path, files: dict[str, str], *, source: str = "src") -> Index:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return index_tree(root, source=source)


def module(index: Index, name: str, source: str | None = None) -> ModuleInfo:
    info = index.module(name, prefer=source)
    assert info is not None, name
    return info


def look(index: Index, where: str, chain: str, *, before: int = 0) -> Resolution:
    return Symbols(index).lookup(module(index, where), chain, before=before)


def where(found: Resolution) -> tuple[str, str, str]:
    assert found.module is not None
    return (found.kind, found.module.module, found.name)


@pytest.fixture
def pkg(tmp_path: Path) -> Index:
    return tree(
        tmp_path,
        {
            "pkg/__init__.py": "from .layers import Mlp\nfrom . import layers\n",
            "pkg/layers/__init__.py": "from .mlp import Mlp as Mlp, make\nfrom .stars import *\n",
            "pkg/layers/mlp.py": """
                import torch.nn as nn
                from torch import nn as tnn
                import torch.nn.functional
                def make(): ...
                class Mlp(nn.Module):
                    pass
                Alias = Mlp
            """,
            "pkg/layers/stars.py": """
                __all__ = ["Public", "also"]
                class Public: ...
                class Hidden: ...
                def also(): ...
                def _private(): ...
            """,
            "pkg/layers/nostars.py": "def visible(): ...\ndef _hidden(): ...\n",
            "pkg/layers/deep/__init__.py": "",
            "pkg/layers/deep/f.py": "def f(): ...\n",
            "pkg/model.py": """
                from __future__ import annotations
                from typing import TYPE_CHECKING
                import pkg.layers.deep as d
                import pkg.layers.mlp
                from .layers import Mlp as Block
                from . import layers as L
                from .layers.nostars import *
                from .layers.mlp import tnn
                from torch.nn import LayerNorm
                if TYPE_CHECKING:
                    from .layers.mlp import make as only_typed
                try:
                    from .layers.mlp import make as fast
                except ImportError:
                    fast = None
                class LayerNorm(LayerNorm):
                    pass
                CONST = 3
            """,
        },
    )


def test_local_definition(pkg: Index) -> None:
    assert where(look(pkg, "pkg.model", "CONST")) == ("definition", "pkg.model", "CONST")


def test_from_import_alias_through_init_reexport_chain(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "Block")
    assert where(found) == ("definition", "pkg.layers.mlp", "Mlp")
    assert [u.kind for u in found.units] == ["class"]
    assert found.consumed == 1


def test_import_as_with_attribute_chain_into_submodule(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "d.f.f")
    assert where(found) == ("definition", "pkg.layers.deep.f", "f")
    assert found.consumed == 3


def test_plain_dotted_import_binds_top_package(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "pkg.layers.mlp.make")
    assert where(found) == ("definition", "pkg.layers.mlp", "make")
    assert found.consumed == 4


def test_relative_module_import_then_attribute(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "L.Mlp.forward")
    assert where(found) == ("definition", "pkg.layers.mlp", "Mlp")
    assert found.consumed == 2  # ``.forward`` is an attribute of the class


def test_module_object(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "L")
    assert found.kind == "module"
    assert found.target == "pkg.layers"


def test_star_import_honours_all(pkg: Index) -> None:
    assert where(look(pkg, "pkg.layers", "Public")) == ("definition", "pkg.layers.stars", "Public")
    assert where(look(pkg, "pkg.layers", "also")) == ("definition", "pkg.layers.stars", "also")
    assert look(pkg, "pkg.layers", "Hidden").kind == "missing"


def test_star_import_without_all_skips_private_names(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "visible")
    assert where(found) == ("definition", "pkg.layers.nostars", "visible")
    assert look(pkg, "pkg.model", "_hidden").kind == "missing"


def test_alias_assignment_is_its_own_definition(pkg: Index) -> None:
    found = look(pkg, "pkg.layers.mlp", "Alias")
    assert where(found) == ("definition", "pkg.layers.mlp", "Alias")
    assert found.units[0].load_reads == ("Mlp",)


def test_external_import_as_written(pkg: Index) -> None:
    found = look(pkg, "pkg.layers.mlp", "nn.Conv2d")
    assert found.kind == "external"
    assert found.target == "torch.nn.Conv2d"
    assert found.binding is not None
    assert (found.binding.name, found.binding.module, found.binding.attr) == (
        "nn",
        "torch.nn",
        None,
    )
    assert found.key == ("pkg.layers.mlp", "nn")


def test_external_top_package_binding(pkg: Index) -> None:
    found = look(pkg, "pkg.layers.mlp", "torch.nn.functional.relu")
    assert found.kind == "external"
    assert found.target == "torch.nn.functional.relu"
    assert found.consumed == 1


def test_external_reexported_by_internal_module_keeps_the_original_binding(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "tnn.Linear")
    assert found.kind == "external"
    assert found.key == ("pkg.layers.mlp", "tnn")
    assert found.target == "torch.nn.Linear"


def test_conditional_import_is_the_compound_unit(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "fast")
    assert where(found) == ("definition", "pkg.model", "fast")
    assert found.units[0].kind == "try"


def test_type_checking_only_binding(pkg: Index) -> None:
    assert look(pkg, "pkg.model", "only_typed").kind == "typing"


def test_load_time_read_sees_earlier_binding(pkg: Index) -> None:
    info = module(pkg, "pkg.model")
    line = next(u.start_line for u in info.units if u.kind == "class")
    assert look(pkg, "pkg.model", "LayerNorm", before=line).kind == "external"
    assert look(pkg, "pkg.model", "LayerNorm").kind == "definition"


def test_builtins_and_module_dunders(pkg: Index) -> None:
    assert look(pkg, "pkg.model", "len").kind == "builtin"
    assert look(pkg, "pkg.model", "__file__").kind == "dunder"
    # an attribute of a module is never a builtin
    assert look(pkg, "pkg.model", "L.len").kind == "missing"


def test_unresolved(pkg: Index) -> None:
    found = look(pkg, "pkg.model", "nowhere.x")
    assert found.kind == "missing"
    assert found.reason == "unresolved"


def test_import_cycle_is_safe(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "cyc/__init__.py": "",
            "cyc/a.py": "from .b import X\n",
            "cyc/b.py": "from .a import X\n",
        },
    )
    found = look(index, "cyc.a", "X")
    assert found.kind == "missing"
    assert found.reason == "cycle"


def test_package_importing_its_own_submodule(tmp_path: Path) -> None:
    index = tree(tmp_path, {"p/__init__.py": "from . import sub\n", "p/sub.py": "def g(): ...\n"})
    assert where(look(index, "p", "sub.g")) == ("definition", "p.sub", "g")


def test_compiled_extension_and_unindexed_modules(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "nat/__init__.py": "",
            "nat/ops.py": (
                "from . import _ext\nfrom nat._C import kernel\nfrom .broken import y\n"
                "from .gone import z\nfrom .built import w\n"
            ),
            "nat/broken.py": "def y(:\n",
        },
    )
    (tmp_path / "nat" / "built.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\0")
    assert look(index, "nat.ops", "_ext").reason == "native"
    assert look(index, "nat.ops", "kernel").reason == "native"
    assert look(index, "nat.ops", "y").reason == "not-indexed"
    assert look(index, "nat.ops", "w").reason == "native"  # a binary, whatever its name
    gone = look(index, "nat.ops", "z")  # a public module that exists nowhere
    assert (gone.reason, gone.target) == ("unresolved", "nat.gone")


def test_same_source_preferred(tmp_path: Path) -> None:
    a = tree(
        tmp_path / "a", {"common.py": "X = 1\n", "user.py": "from common import X\n"}, source="a"
    )
    b = tree(
        tmp_path / "b", {"common.py": "X = 2\n", "user.py": "from common import X\n"}, source="b"
    )
    both = Index(checkouts={**a.checkouts, **b.checkouts}, modules=[*a.modules(), *b.modules()])
    found = Symbols(both).lookup(module(both, "user", "b"), "X")
    assert found.module is not None
    assert found.module.source == "b"


def test_symbols_for_is_shared_per_index(pkg: Index) -> None:
    assert symbols_for(pkg) is symbols_for(pkg)


@pytest.fixture
def branches(tmp_path: Path) -> Index:
    """Names bound in the branches of run-time ``if`` units of a package ``__init__``."""
    return tree(
        tmp_path,
        {
            "lz/a.py": "class X: ...\nclass Y: ...\n",
            "lz/b.py": "class X: ...\n",
            "lz/__init__.py": """
                import sys
                from typing import TYPE_CHECKING
                SLOW = False
                if TYPE_CHECKING or SLOW:
                    if SLOW:
                        from .a import X
                else:
                    sys.modules[__name__] = object()
                if not SLOW:
                    sys.modules[__name__] = object()
                else:
                    from .a import Y
                if SLOW:
                    from .a import Z
                else:
                    from .b import Z
                if SLOW:
                    from .a import W
                else:
                    W = None
                if SLOW:
                    import numpy as np
                if TYPE_CHECKING:
                    from .a import T
                else:
                    T = None
                V = None
                if SLOW:
                    from .a import V
            """,
        },
    )


def test_import_in_any_branch_of_a_runtime_if_resolves_to_its_definition(branches: Index) -> None:
    found = look(branches, "lz", "X")
    assert where(found) == ("definition", "lz.a", "X")
    assert [u.kind for u in found.units] == ["class"]
    assert where(look(branches, "lz", "Y")) == ("definition", "lz.a", "Y")


def test_branches_that_bind_different_objects_keep_the_unit(branches: Index) -> None:
    for name in ("Z", "W", "T", "V"):  # two imports, an assignment, an earlier unit
        found = look(branches, "lz", name)
        assert where(found) == ("definition", "lz", name), name
    assert [u.kind for u in look(branches, "lz", "V").units] == ["assign", "if"]


def test_external_import_in_a_branch_keeps_its_guard(branches: Index) -> None:
    found = look(branches, "lz", "np")
    assert where(found) == ("definition", "lz", "np")
    assert found.units[0].kind == "if"


def test_absent_import_only_for_names_an_indexed_module_binds_in_no_way(tmp_path: Path) -> None:
    """``from m import x`` in a ``try`` unit is absent when indexed ``m`` binds ``x`` by no
    definition, import, star import or submodule and the unit binds ``x`` otherwise too;
    not in an ``if`` unit, nor for an external module."""
    index = tree(
        tmp_path,
        {
            "lib/__init__.py": "from .version import *\nfrom . import sub\n",
            "lib/version.py": "__version__ = '1'\n__all__ = ['__version__']\n",
            "lib/sub.py": "",
            "app/__init__.py": """
                try:
                    from torch import helper
                except ImportError:
                    from lib import helper, __version__, sub
                if True:
                    from lib import gone
                try:
                    from lib import fused
                except ImportError:
                    pass
                try:
                    from lib import fast
                except ImportError:
                    fast = None
            """,
        },
    )
    info = module(index, "app")
    symbols = Symbols(index)
    absent = {
        (unit.kind, b.attr)
        for unit in info.units
        for b in unit.imports
        if symbols.absent_import(info, unit, b)
    }
    assert absent == {("try", "helper"), ("try", "fast")}  # ``fused``: bound by nothing else


def test_absent_call_time_imports_and_the_error_the_original_raises(tmp_path: Path) -> None:
    """An import inside a function is absent when the sources have no such module (the first
    missing one is named) or its module binds the name in no way; not a namespace folder, a
    compiled extension (a private name), an external module, or what exists."""
    index = tree(
        tmp_path,
        {
            "lib/__init__.py": "from .version import *\n",
            "lib/version.py": "__version__ = '1'\n",
            "lib/space/mod.py": "def tool():\n    pass\n",
            "app/__init__.py": """
                def run():
                    from lib.core.export import clip
                    import lib.core.export
                    from lib import gone, __version__
                    from lib.space.mod import tool
                    from lib import _ext
                    from lib.version import __version__ as v
                    from torch import nothing
            """,
        },
    )
    info = module(index, "app")
    symbols = Symbols(index)
    (unit,) = [u for u in info.units if u.kind == "def"]
    errors = {
        (b.module, b.attr): symbols.absent_error(info, b)
        for b in unit.local_imports
        if symbols.absent_import(info, unit, b)
    }
    missing = "ModuleNotFoundError(\"No module named 'lib.core'\", name='lib.core')"
    assert errors == {
        ("lib.core.export", "clip"): missing,
        ("lib.core.export", None): missing,
        ("lib", "gone"): "ImportError(\"cannot import name 'gone' from 'lib'\", name='lib')",
    }


def test_lazy_export_only_through_a_module_getattr(tmp_path: Path) -> None:
    """A name bound only under TYPE_CHECKING is a lazy export of a module with a module-level
    ``__getattr__``; not without one, nor a name the module also binds at run time."""
    index = tree(
        tmp_path,
        {
            "lazy/__init__.py": """
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from sdk import Client, Both
                Both = None
                def __getattr__(name):
                    raise AttributeError(name)
            """,
            "plain/__init__.py": """
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from sdk import Client
            """,
        },
    )
    symbols = Symbols(index)
    found = symbols.lazy_export(module(index, "lazy"), "Client")
    assert found is not None
    assert (found.module, found.attr) == ("sdk", "Client")
    assert symbols.lazy_export(module(index, "lazy"), "Both") is None
    assert symbols.lazy_export(module(index, "plain"), "Client") is None
