"""Registries as data: registrations indexed by registry family and type string."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nnrag.extract.needs import scanner_for
from nnrag.extract.registries import RegistryIndex, registries_for
from nnrag.extract.resolve import resolve
from nnrag.extract.syntax import type_strings
from nnrag.index.build import Index, index_tree
from nnrag.index.discover import discover_blocks

FILES = {
    "core/__init__.py": "",
    "core/registry.py": """
        class Registry:
            def __init__(self, name, parent=None):
                self.name, self.parent, self.entries = name, parent, {}

            def register_module(self, name=None, force=False, module=None):
                def add(obj):
                    self.entries[name or obj.__name__] = obj
                    return obj
                return add(module) if module is not None else add

            def build(self, cfg):
                return self.entries[cfg["type"]]()
        """,
    "core/root.py": """
        import torch
        from torch import nn

        from .registry import Registry

        MODELS = Registry("model")
        OTHER = Registry("other")
        MODELS.register_module("BN", module=nn.BatchNorm2d)
        MODELS.register_module(module=nn.LayerNorm)
        if torch.__version__ >= "1":
            MODELS.register_module("SiLU", module=nn.SiLU)
        for _name in ("A", "B"):
            MODELS.register_module(_name, module=nn.Identity)
        for _module in [nn.ReLU, nn.ELU]:
            MODELS.register_module(module=_module)


        @OTHER.register_module(name=["Twice", "Double"])
        class Twice(nn.Module):
            def forward(self, x):
                return 2 * x
        """,
    "app/__init__.py": "",
    "app/registry.py": """
        from core.registry import Registry
        from core.root import MODELS as ROOT

        MODELS = Registry("model", parent=ROOT)
        """,
    "side/__init__.py": "",
    "side/norms.py": """
        from torch import nn

        from core.registry import Registry
        from core.root import MODELS as ROOT

        SIDE = Registry("model", parent=ROOT)
        SIDE.register_module("BN", module=nn.SyncBatchNorm)
        """,
    "app/blocks.py": """
        from torch import nn

        from app.registry import MODELS


        @MODELS.register_module()
        class Uses(nn.Module):
            def __init__(self, norm=dict(type="BN"), other={"type": "Nowhere"}):
                super().__init__()
                self.norm = MODELS.build(norm)

            def forward(self, x):
                return self.norm(x)


        @MODELS.register_module
        class Plain(nn.Module):
            def forward(self, x):
                return x
        """,
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("registries")
    for name, text in FILES.items():
        path = Path(root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return index_tree(root, source="src")


def _registry_index(index: Index) -> RegistryIndex:
    return registries_for(index, scanner_for(index))


def test_registrations_by_family_and_key(index: Index) -> None:
    registries = _registry_index(index)
    families = {id(f): f for f in registries.family_of.values()}
    labels = sorted(f.label for f in families.values())
    # the child registry (parent=) joins its parent's family
    assert labels == ["core.root:MODELS", "core.root:OTHER"]
    models = next(f for f in families.values() if f.label == "core.root:MODELS")
    assert sorted(models.entries) == ["BN", "ELU", "LayerNorm", "Plain", "ReLU", "SiLU", "Uses"]
    other = next(f for f in families.values() if f.label == "core.root:OTHER")
    assert sorted(other.entries) == ["Double", "Twice"]
    bn, side = models.entries["BN"]
    assert (bn.registry, bn.module) == ("core.root:MODELS", "core.root")
    assert (side.registry, side.module) == ("core.root:MODELS", "side.norms")
    (uses,) = models.entries["Uses"]
    assert (uses.registry, uses.module) == ("core.root:MODELS", "app.blocks")  # its family
    assert str(uses) == "core.root:MODELS['Uses']"


def test_registrations_outside_the_paths_are_found_and_carried(
    index: Index, tmp_path: Path
) -> None:
    """``paths`` choose the blocks; a type string reaches its entry wherever in the
    source's packages it is registered (here ``core.root``, a package ``app`` imports)."""
    root = Path(index.checkouts["src"].root)
    scoped = index_tree(root, source="src", paths=["app"])
    assert {info.module.split(".")[0] for info in scoped.modules()} == {"app"}

    def model_keys(of: Index) -> list[str]:
        families = _registry_index(of).family_of.values()
        return sorted(next(f for f in families if f.label == "core.root:MODELS").entries)

    assert model_keys(scoped) == model_keys(index)
    block = next(b for b in discover_blocks(scoped) if b.name == "Uses")
    assert [(r.key, r.module) for r in resolve(scoped, block).registrations] == [
        ("BN", "core.root")
    ]


def test_a_package_nothing_in_the_paths_imports_is_not_read_for_registrations(
    tmp_path: Path,
) -> None:
    root = tmp_path / "src"
    for name, text in FILES.items():
        path = Path(root, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_toy.py").write_text(
        "from core.root import MODELS\n\n\n@MODELS.register_module(name='BN', force=True)\n"
        "class Toy:\n    pass\n"
    )
    scoped = index_tree(root, source="src", paths=["app"])
    models = next(
        f for f in _registry_index(scoped).family_of.values() if f.label == "core.root:MODELS"
    )
    # core is imported from the paths; side and tests are not (a test's toy never stands in)
    assert {r.module for r in models.entries["BN"]} == {"core.root"}


def test_registration_in_a_loop_has_no_static_key(index: Index) -> None:
    registries = _registry_index(index)
    assert not registries.registered("A")
    assert not registries.registered("_name")
    assert registries.registered("SiLU")  # a guarded registration is still one


def test_type_strings_of_config_dicts() -> None:
    tree = ast.parse("a = dict(type='BN', eps=1)\nb = {'type': 'GN', 'n': 'x'}\nc = f(type=t)\n")
    assert list(type_strings(tree)) == [("BN", 1), ("GN", 2)]


def test_closure_carries_reached_keys_only(index: Index) -> None:
    block = next(b for b in discover_blocks(index) if b.name == "Uses")
    closure = resolve(index, block)
    # the sibling scope's "BN" is not carried: a registry of the closure has its own
    assert [(r.key, r.module) for r in closure.registrations] == [("BN", "core.root")]
    root = index.module("core.root")
    assert root is not None
    texts = [
        scanner_for(index).text(root, root.units[u.index])
        for u in closure.units
        if u.module == "core.root"
    ]
    assert any('register_module("BN"' in text for text in texts)
    assert not any("LayerNorm" in text or "Twice" in text for text in texts)
    registry = [p for p in closure.problems if p.category == "dynamic-registry"]
    assert len(registry) == 1
    assert "'Nowhere'" in registry[0].message
    assert registry[0].dependency_path[0] == "Uses"


SCOPED = """
    import inspect
    import sys


    class Registry:
        def __init__(self, name, parent=None, scope=None):
            if scope is None:
                scope = self.infer()
            self.name, self.parent, self.scope = name, parent, scope

        @staticmethod
        def infer():
            return inspect.getmodule(sys._getframe(2)).__name__{suffix}


    ROOT = {call}
    """


@pytest.mark.parametrize(
    ("call", "suffix", "expected"),
    [
        ('Registry("m")', ".split('.')[0]", ("scope", "pkg")),
        ('Registry("m")', "", ("scope", "pkg.registry")),  # the whole module name
        ('Registry("m", None, "given")', ".split('.')[0]", None),  # passed positionally
        ('Registry("m", scope="given")', ".split('.')[0]", None),
        ('Registry("m", **options)', ".split('.')[0]", None),  # may pass it
    ],
)
def test_inferred_scope_is_what_the_original_module_computes(
    tmp_path: Path, call: str, suffix: str, expected: tuple[str, str] | None
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    text = textwrap.dedent(SCOPED).replace("{suffix}", suffix).replace("{call}", call)
    (tmp_path / "pkg" / "registry.py").write_text("options = {}\n" + text)
    index = index_tree(tmp_path, source="src")
    info = index.module("pkg.registry")
    assert info is not None
    unit = next(u for u in info.units if "ROOT" in u.binds)
    assert registries_for(index, scanner_for(index)).inferred_scope(info, unit) == expected


def test_emitted_registries_keep_their_original_scopes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The golden case's block file, imported as a module: the child registry no longer
    collides with its parent, and each has the scope its package gave it."""
    import importlib.util
    import sys

    from tests.unit.test_cases import run_case

    path = tmp_path / "nnrag_block.py"
    path.write_text(run_case("emit_registry_inferred_scope").code)
    spec = importlib.util.spec_from_file_location("nnrag_block", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "nnrag_block", module)
    spec.loader.exec_module(module)
    net = module.Net()
    assert (net.scope, net.parent_scope) == ("vision", "core")
    assert net.siblings == ["audio", "vision"]
    assert net.op(2) == 6  # Scale(factor=3), built through the child from the root
    assert net.gain.gain == 0.5


def _run_case_block(case: str) -> object:
    """The golden block file of ``tests/cases/<case>`` imported as a module (trusted: it is
    the test's own hand-made source)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "cases" / case / "expected.py"
    spec = importlib.util.spec_from_file_location(f"nnrag_case_{case}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_renamed_registered_class_keeps_its_key() -> None:
    """A class renamed in the block file is still registered under its source name, and each
    scope's registry finds its own class, as in the sources."""
    import torch

    block: Any = _run_case_block("resolve_registry_renamed_entry")
    head = block.Head()
    assert type(head.loss).__name__ == "L1Loss"
    assert type(head.aux_loss).__name__ == "L1Loss"
    assert type(head.loss) is not type(head.aux_loss)
    pred, target = torch.zeros(2, 1, 4, 4), torch.ones(2, 1, 4, 4)
    assert head.loss(pred, target).item() == 32.0  # the segmentation package's sum
    assert head.aux_loss(pred, target).item() == 1.0  # the detection package's mean


def test_scope_qualified_string_finds_the_other_scope() -> None:
    """``'det.DiceLoss'`` built from the segmentation registry is the detection package's."""
    import torch

    block: Any = _run_case_block("resolve_registry_scope_qualified_string")
    head = block.Head()
    assert type(head.loss).__name__ == "DiceLoss"
    assert head(torch.randn(2, 8, 4, 4), torch.rand(2, 1, 4, 4)).shape == ()


def test_a_class_registry_keyed_by_enum_members_finds_the_default_entry() -> None:
    """The block file carries the entry of the member whose value the closure quotes (the
    default backend) and the lookup by ``BackendName("native")`` finds it."""
    import torch

    block: Any = _run_case_block("resolve_registry_class_member_keys")
    assert torch.equal(block.Attention()(torch.ones(3)), torch.full((3,), 2.0))
    assert not hasattr(block, "_flash")


def test_a_member_spelled_through_an_alias_carries_its_entry(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "src"
    cases = Path(__file__).resolve().parent.parent / "cases"
    shutil.copytree(cases / "resolve_registry_class_member_keys" / "src", root)
    (root / "pkg" / "fast.py").write_text(
        textwrap.dedent(
            """
            from torch import nn

            from pkg.dispatch import BackendName as Names, _BackendRegistry


            class FastAttention(nn.Module):
                def forward(self, x):
                    return _BackendRegistry._backends[Names.FLASH](x)
            """
        ).lstrip()
    )
    index = index_tree(root, source="src")
    block = next(b for b in discover_blocks(index) if b.name == "FastAttention")
    carried = {r.key for r in resolve(index, block).registrations}
    assert "flash" in carried
