"""Discovery: which top-level classes are blocks, found without importing torch."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.errors import BlockNotFoundError
from nnrag.index.build import Index, index_tree
from nnrag.index.discover import discover_blocks, find_block, in_scope, torch_table
from nnrag.model import BlockRef, SourceSpec


def tree(root: Path, files: dict[str, str], *, source: str = "src") -> Index:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return index_tree(root, source=source)


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def ids(index: Index) -> set[str]:
    return {f"{b.module}:{b.name}" for b in discover_blocks(index)}


FORWARD = "    def forward(self, x):\n        return x\n"


def test_torch_table_knows_containers() -> None:
    table = torch_table()
    sequential = table.qualify("torch.nn.Sequential")
    assert sequential == "torch.nn.modules.container.Sequential"
    assert table.forward[sequential] is True
    assert table.forward[table.qualify("torch.nn.ModuleList") or ""] is False
    assert table.forward[table.qualify("torch.nn.Module") or ""] is False
    assert table.forward[table.qualify("torch.nn.modules.conv.Conv2d") or ""] is True
    assert table.qualify("torch.nn.Parameter") is None


def test_spellings_of_nn_module(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "m/__init__.py": "",
            "m/a.py": "import torch\nclass A(torch.nn.Module):\n" + FORWARD,
            "m/b.py": "from torch import nn\nclass B(nn.Module):\n" + FORWARD,
            "m/c.py": "import torch.nn as tnn\nclass C(tnn.Module):\n" + FORWARD,
            "m/d.py": "from torch.nn import Module as M\nclass D(M):\n" + FORWARD,
            "m/e.py": "import torch.nn\nclass E(torch.nn.modules.module.Module):\n" + FORWARD,
        },
    )
    assert ids(index) == {"m.a:A", "m.b:B", "m.c:C", "m.d:D", "m.e:E"}


def test_inheritance_through_other_modules_reexports_and_aliases(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "p/__init__.py": "from .base import *\n",
            "p/base.py": src(
                """
                __all__ = ["Base", "NoForward"]
                from torch import nn
                class Base(nn.Module):
            """
            )
            + FORWARD
            + "class NoForward(nn.Module):\n    pass\n",
            "p/alias.py": "from p import Base\nAliased = Base\n",
            "p/user.py": src(
                """
                from .alias import Aliased
                from . import base as b
                from p import NoForward
                class ViaAlias(Aliased):
                    pass
                class ViaModuleChain(b.Base):
                    pass
                class StillNoForward(NoForward):
                    pass
            """
            ),
        },
    )
    assert ids(index) == {"p.base:Base", "p.user:ViaAlias", "p.user:ViaModuleChain"}


def test_external_bases_from_the_table(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "q.py": src(
                """
                import torch.nn as nn
                from torch.nn import Sequential, ModuleList, ModuleDict
                class Conv(nn.Conv2d):
                    pass
                class Seq(Sequential):
                    pass
                class Layers(ModuleList):
                    pass
                class Table(ModuleDict):
                    pass
                class LayersWithForward(ModuleList):
            """
            )
            + FORWARD
            + "class NotAModule(nn.Parameter):\n"
            + FORWARD,
        },
    )
    assert ids(index) == {"q:Conv", "q:Seq", "q:LayersWithForward"}


def test_inheritance_across_sources(tmp_path: Path) -> None:
    lib = tree(
        tmp_path / "lib",
        {"lib/__init__.py": "from torch import nn\nclass Base(nn.Module):\n" + FORWARD},
        source="lib",
    )
    app = tree(
        tmp_path / "app",
        {"app/__init__.py": "", "app/m.py": "from lib import Base\nclass Child(Base):\n    pass\n"},
        source="app",
    )
    both = Index(
        checkouts={**lib.checkouts, **app.checkouts}, modules=[*lib.modules(), *app.modules()]
    )
    found = {b.id for b in discover_blocks(both)}
    assert found == {"lib:lib:Base", "app:app.m:Child"}


def test_abstract_classes(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "ab.py": src(
                """
                import abc
                from abc import ABC, abstractmethod
                from torch import nn
                class Abstract(nn.Module, ABC):
                    @abstractmethod
                    def forward(self, x): ...
                class Concrete(Abstract):
                    def forward(self, x):
                        return x
                class StillAbstract(Abstract):
                    @abc.abstractmethod
                    def extra(self): ...
                class Meta(nn.Module, metaclass=abc.ABCMeta):
                    @abstractmethod
                    def forward(self, x): ...
                class NotEnforced(nn.Module):
                    # without ABCMeta the class can be instantiated: it is a block at run time
                    @abstractmethod
                    def forward(self, x): ...
            """
            ),
        },
    )
    assert ids(index) == {"ab:Concrete", "ab:NotEnforced"}


def test_conditional_alias_and_unknown_external_base(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "c.py": src(
                """
                import torch
                try:
                    import lightning as pl
                    HAVE = True
                except ImportError:
                    HAVE = False
                if HAVE:
                    Base = pl.LightningModule
                else:
                    Base = torch.nn.Module
                class Guarded(Base):
            """
            )
            + FORWARD
            + "class Unknown(pl.SomethingElse):\n"
            + FORWARD,
        },
    )
    assert ids(index) == {"c:Guarded"}


def test_block_fields_and_inherited_forward(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "f.py": src(
                """
                from torch import nn
                class Base(nn.Module):
                    '''A base.'''
                    def __init__(self, dim: int = 4):
                        super().__init__()
                    def forward(self, x, mask=None):
                        return x
                class Child(Base):
                    '''Child block.'''
            """
            ),
        },
    )
    blocks = {b.name: b for b in discover_blocks(index)}
    child = blocks["Child"]
    assert child.id == "src:f:Child"
    assert child.path == "f.py"
    assert child.docstring == "Child block."
    assert child.forward_signature == "x, mask=None"
    assert child.init_signature == "dim: int=4"
    assert [b.id for b in discover_blocks(index)] == ["src:f:Base", "src:f:Child"]


def blocks_named(*ids_: str) -> list[BlockRef]:
    found = []
    for ident in ids_:
        source, module, name = ident.split(":")
        found.append(BlockRef(source=source, module=module, name=name, path="x.py", line=1))
    return found


def test_find_block() -> None:
    blocks = blocks_named("s:a.mlp:Mlp", "s:b.mlp:Mlp", "s:a.conv:Conv", "t:a.conv:Conv")
    assert find_block(blocks, "s:a.mlp:Mlp").id == "s:a.mlp:Mlp"
    assert find_block(blocks, "a.mlp:Mlp").id == "s:a.mlp:Mlp"
    assert find_block(blocks, "b.mlp.Mlp").id == "s:b.mlp:Mlp"
    with pytest.raises(BlockNotFoundError) as ambiguous:
        find_block(blocks, "Mlp")
    assert ambiguous.value.candidates == ("s:a.mlp:Mlp", "s:b.mlp:Mlp")
    assert "s:b.mlp:Mlp" in str(ambiguous.value)
    with pytest.raises(BlockNotFoundError) as missing:
        find_block(blocks, "Nothing")
    assert missing.value.candidates == ()
    assert isinstance(missing.value, LookupError)


def test_in_scope_include_exclude() -> None:
    (block,) = blocks_named("s:pkg.layers:Mlp")
    spec = SourceSpec(name="s", kind="path", location="/x")
    assert in_scope(block, spec)
    assert in_scope(block, None)
    assert in_scope(block, SourceSpec(name="s", kind="path", location="/x", include=("Mlp",)))
    assert in_scope(block, SourceSpec(name="s", kind="path", location="/x", include=("pkg.*:*",)))
    assert not in_scope(block, SourceSpec(name="s", kind="path", location="/x", include=("Conv*",)))
    assert not in_scope(
        block, SourceSpec(name="s", kind="path", location="/x", exclude=("pkg.layers:*",))
    )


def test_workspace_blocks_apply_include_exclude(tmp_path: Path) -> None:
    from nnrag.model import Settings
    from nnrag.workspace import Workspace

    tree(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/m.py": "from torch import nn\nclass A(nn.Module):\n" + FORWARD + "class B(A):\n"
            "    pass\nclass C(A):\n    pass\n",
        },
    )
    spec = SourceSpec(name="src", kind="path", location=str(tmp_path / "src"), exclude=("*:B",))
    workspace = Workspace(Settings(sources=(spec,), cache_dir=tmp_path / "cache"))
    assert [b.id for b in workspace.blocks()] == ["src:pkg.m:A", "src:pkg.m:C"]
    assert workspace.find("C").id == "src:pkg.m:C"
    with pytest.raises(BlockNotFoundError):
        workspace.find("B")
