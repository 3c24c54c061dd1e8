"""Imports by name served by the block file, and string tables cut to the keys a block quotes."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import cast

import pytest

from nnrag.extract.dynimport import SHIM, by_name, serve_imports, shim_chunk
from nnrag.extract.tables import drop_entries
from tests.unit.test_cases import run_case


def _load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, *, mkdir: bool = False
) -> ModuleType:
    if mkdir:
        tmp_path.mkdir()
    path = tmp_path / "nnrag_block.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("nnrag_block", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "nnrag_block", module)
    spec.loader.exec_module(module)
    return module


def test_block_file_serves_imports_by_name_from_what_it_carries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The golden case's block file, imported: the load-time decorator found the checkpoint
    through the computed import, without importing the source package."""
    monkeypatch.delitem(sys.modules, "pkg", raising=False)
    block = _load(tmp_path, monkeypatch, run_case("emit_import_by_computed_name").code)
    assert "pkg" not in sys.modules
    assert block.AlphaModel.checkpoint == "alpha-base"
    alpha = block._nnrag_import_module(".alpha", "pkg.models")
    assert alpha.AlphaConfig is block.AlphaConfig
    assert block._nnrag_import_module("pkg").models.alpha is alpha  # submodules as attributes
    with pytest.raises(ModuleNotFoundError) as missing:
        block.CONFIGS["beta"]  # a module of the source the block carries nothing of
    assert missing.value.name == "pkg.models.beta"
    with pytest.raises(KeyError):
        block.CONFIGS["gamma"]  # as the original: the mapping has no such key
    with pytest.raises(AttributeError, match="carries only the definitions"):
        _ = alpha.Missing
    assert not hasattr(block._nnrag_import_module("pkg"), "BetaConfig")
    assert block._nnrag_import_module("json") is json  # other modules import as usual


def test_block_file_serves_dunder_import_from_what_it_carries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``getattr(__import__("pkg").layers, name)`` in the block file finds the carried layer
    without the source package; a layer it does not carry is an AttributeError that says so;
    other modules import as ``__import__`` does (the top package, or the module with a
    fromlist)."""
    torch = pytest.importorskip("torch")
    monkeypatch.delitem(sys.modules, "pkg", raising=False)
    block = _load(tmp_path, monkeypatch, run_case("emit_dunder_import_by_name").code)
    net = block.Net()
    assert "pkg" not in sys.modules
    assert isinstance(net.body[0], block.Scale)
    assert float(net(torch.tensor(3.0))) == 6.0
    assert block._nnrag_dunder_import("pkg").layers.Scale is block.Scale
    with pytest.raises(AttributeError, match="carries only the definitions"):
        block.build("pkg.layers.Unused", None)
    assert block._nnrag_dunder_import("os.path") is os
    assert block._nnrag_dunder_import("os.path", fromlist=["join"]) is os.path


def _pkg(name: str) -> bool:
    return name.split(".", maxsplit=1)[0] == "pkg"


def _call(text: str) -> ast.Call:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call)
    return node


@pytest.mark.parametrize(
    ("text", "module", "exact", "served"),
    [
        ('importlib.import_module("pkg.sub")', "pkg.sub", True, True),
        ('import_module(f".{name}", "pkg.models")', "pkg.models.", False, True),
        ('importlib.import_module("..x" + name, package="pkg.a.b")', "pkg.a.x", False, True),
        ('import_module(f"pkg.layers.{name}")', "pkg.layers.", False, True),
        ('import_module(f".{name}", __package__)', "", False, True),
        ('__import__("pkg")', "pkg", True, True),
        ('__import__("pkg.sub", fromlist=["x"])', "pkg.sub", True, True),
        ('__import__("pkg", globals(), locals(), [], 1)', "pkg", True, False),  # relative
    ],
)
def test_imports_by_name_of_source_modules(
    text: str, module: str, exact: bool, served: bool
) -> None:
    found = list(by_name(_call(text), _pkg))
    assert [(f.module, f.exact, f.served) for f in found] == [(module, exact, served)]


@pytest.mark.parametrize(
    "text",
    [
        'importlib.import_module("json")',  # not a source module
        "importlib.import_module(name)",  # nothing known of the name
        'import_module(f"{scope}.registry")',  # starts with a computed part
    ],
)
def test_other_imports_by_name_are_left_alone(text: str) -> None:
    assert not list(by_name(_call(text), _pkg))
    assert serve_imports(text + "\n", _pkg) == text + "\n"


def test_serve_imports_replaces_only_the_callee() -> None:
    chunk = (
        "# from pkg.auto\n"
        "def load(key):\n"
        '    first = importlib.import_module(f".{key}", "pkg.models")  # é\n'
        '    return first, import_module("pkg"), self.import_module("pkg.b")\n'
    )
    served = serve_imports(chunk, _pkg)
    assert served == (
        "# from pkg.auto\n"
        "def load(key):\n"
        f'    first = {SHIM}(f".{{key}}", "pkg.models")  # é\n'
        f'    return first, {SHIM}("pkg"), self.import_module("pkg.b")\n'
    )
    assert 'self.import_module("pkg.b")' in served  # a method of that name is not importlib's


def test_shim_without_a_carried_module_refuses_source_modules() -> None:
    namespace: dict[str, object] = {}
    exec(compile(shim_chunk({}, ["pkg"]), "<shim>", "exec"), namespace)
    shim = namespace[SHIM]
    assert callable(shim)
    with pytest.raises(ModuleNotFoundError, match="in this block file"):
        shim("pkg.anything")


def _shim(packages: list[str]) -> Callable[[str], ModuleType]:
    namespace: dict[str, object] = {}
    exec(compile(shim_chunk({}, packages), "<shim>", "exec"), namespace)
    shim = namespace[SHIM]
    assert callable(shim)
    return cast("Callable[[str], ModuleType]", shim)


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` for hand-made packages; what they import is forgotten after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _package(root: Path, name: str, files: dict[str, str]) -> None:
    (root / name).mkdir()
    for file, text in {"__init__.py": "", **files}.items():
        (root / name / file).write_text(text, encoding="utf-8")
    importlib.invalidate_caches()


def test_shim_stands_in_for_an_absent_compiled_extension(packages: Path) -> None:
    """``load_ext("_ext", [...])`` of a pure-Python build: the import succeeds, ``hasattr``
    passes for every operator, and the first call raises ModuleNotFoundError naming the module
    (``classify``'s native-op test); the package itself is not imported to find that out."""
    _package(packages, "nnrag_lite_ops", {"__init__.py": "raise RuntimeError('imported')\n"})
    shim = _shim(["nnrag_lite_ops"])
    ext = shim("nnrag_lite_ops._ext")
    assert "nnrag_lite_ops" not in sys.modules
    assert shim("nnrag_lite_ops._ext") is ext
    assert hasattr(ext, "focal_forward")
    assert ext.focal_forward is ext.focal_forward
    assert ext.focal_forward.__name__ == "focal_forward"
    assert not hasattr(ext, "__path__")  # dunder and private names: as on any module
    assert not hasattr(ext, "_private")
    with pytest.raises(ModuleNotFoundError) as called:
        ext.focal_forward(1.0, gamma=2.0)
    assert called.value.name == "nnrag_lite_ops._ext"
    assert str(called.value) == (
        "nnrag_lite_ops._ext.focal_forward: compiled extension 'nnrag_lite_ops._ext' is not "
        "installed; the block file deferred the import to this first call"
    )
    with pytest.raises(ModuleNotFoundError, match="in this block file"):
        shim("nnrag_lite_ops.models")  # a public module it carries nothing of: as before
    with pytest.raises(ModuleNotFoundError, match="in this block file"):
        shim("nnrag_lite_ops")


def test_shim_uses_the_installed_compiled_extension(packages: Path) -> None:
    _package(packages, "nnrag_full_ops", {"_ext.py": "def focal_forward(x):\n    return x + 1\n"})
    ext = _shim(["nnrag_full_ops"])("nnrag_full_ops._ext")
    assert ext is sys.modules["nnrag_full_ops._ext"]
    assert ext.focal_forward(1) == 2


def test_shim_stand_in_says_why_an_installed_extension_does_not_load(packages: Path) -> None:
    _package(packages, "nnrag_bad_ops", {"_ext.py": "raise ImportError('undefined symbol: f')\n"})
    ext = _shim(["nnrag_bad_ops"])("nnrag_bad_ops._ext")
    with pytest.raises(ModuleNotFoundError, match=r"does not load \(ImportError: undefined"):
        ext.focal_forward()


def test_compiled_extension_block_runs_its_cpu_path_and_fails_where_it_calls_the_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The golden case's block files, imported: the CPU path of FocalLoss runs; FusedFocalLoss
    calls the absent operator and raises there, naming the module."""
    torch = pytest.importorskip("torch")
    from nnrag.extract.block import extract
    from tests.unit.test_cases import case_index, target_block

    monkeypatch.delitem(sys.modules, "pkg", raising=False)
    block = _load(tmp_path, monkeypatch, run_case("emit_compiled_extension_by_name").code)
    x = torch.linspace(-2.0, 2.0, 5)
    assert torch.isfinite(block.FocalLoss()(x)).all()
    assert "pkg" not in sys.modules
    index = case_index("emit_compiled_extension_by_name")
    fused = extract(index, target_block(index, "pkg.ops.focal:FusedFocalLoss")).code
    other = _load(tmp_path / "fused", monkeypatch, fused, mkdir=True)
    with pytest.raises(ModuleNotFoundError, match=r"pkg\._ext\.focal_forward: compiled") as call:
        other.FusedFocalLoss()(x)
    assert call.value.name == "pkg._ext"


@pytest.mark.parametrize(
    ("chunk", "drop", "expected"),
    [
        (
            'T = {\n    "a": A,  # first\n    "b": B,\n    "c": C,\n}\n',
            {"b"},
            'T = {\n    "a": A,  # first\n    "c": C,\n}\n',
        ),
        ('T = {"a": A, "b": B, "c": C}\n', {"b"}, 'T = {"a": A, "c": C}\n'),
        ('T = {"a": A, "b": B, "c": C}\n', {"c"}, 'T = {"a": A, "b": B}\n'),
        ('T = {"a": A, "b": B, "c": C}\n', {"b", "c"}, 'T = {"a": A}\n'),
        (
            'T = {\n    "a": (\n        A,\n        1,\n    ),\n    "b": B,\n}\n',
            {"a"},
            'T = {\n    "b": B,\n}\n',
        ),
    ],
)
def test_drop_entries(chunk: str, drop: set[str], expected: str) -> None:
    assert drop_entries(chunk, frozenset(drop)) == expected
    ast.parse(expected)


def test_string_table_keeps_the_quoted_keys_and_says_what_it_left_out() -> None:
    extracted = run_case("resolve_string_table_entries")
    assert "class TableGELU" not in extracted.code
    assert "erf_table" not in extracted.code  # read only by a left-out entry's class
    assert "class ClippedGELU" in extracted.code
    assert '"relu": nn.ReLU' in extracted.code  # an external class brings nothing: kept
    (problem,) = extracted.problems
    assert problem.category == "dynamic-registry"
    assert "ACT2CLS keeps 3 of 5" in problem.message
    assert "'gelu-table', 'swish'" in problem.message
    assert "class GELUActivation" in extracted.code  # "gelu" occurs in "gelu_10"
    assert extracted.file_lines["src:pkg/activations.py"] < 40


def test_string_table_whose_keys_the_block_never_mentions_is_carried_whole(
    tmp_path: Path,
) -> None:
    """The key comes from the caller (a config the block does not carry): every entry."""
    from nnrag.extract.block import extract
    from nnrag.index.build import index_tree
    from tests.unit.test_cases import target_block

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "acts.py").write_text(
        "class Gelu:\n    pass\n\n\nclass Silu:\n    pass\n\n\n"
        'TABLE = {"gelu": Gelu, "silu": Silu}\n'
    )
    (tmp_path / "pkg" / "block.py").write_text(
        "from pkg.acts import TABLE\n\n\nclass Block:\n"
        "    def __init__(self, config):\n        self.act = TABLE[config.act]()\n"
    )
    index = index_tree(tmp_path, source="src")
    extracted = extract(index, target_block(index, "pkg.block:Block"))
    assert "class Gelu" in extracted.code
    assert "class Silu" in extracted.code
    assert not extracted.problems


def test_torch_ops_namespaces_of_source_packages() -> None:
    """``torch.ops.ns`` (``torch`` maybe renamed) of a source package is found; other
    namespaces (``aten``, a package not of the sources) and other ``ops`` are not."""
    from nnrag.extract.dynimport import native_namespaces

    chunk = (
        "def f(x):\n"
        "    y = torch.ops.vis.nms(x) + torch_2.ops.vis2.roi(x)\n"
        "    return torch.ops.aten.add(y, y) + other.ops.vis3.f(x) + torch.ops.ext.g(x)\n"
    )
    assert native_namespaces(chunk, lambda name: name.startswith("vis")) == {"vis", "vis2"}
    assert native_namespaces("x = 1\n", lambda name: True) == frozenset()


def test_serve_native_ops_and_module_file_rewrite_only_their_expressions() -> None:
    from nnrag.extract.dynimport import MODULE_FILE, TORCH_OPS, serve_module_file, serve_native_ops

    chunk = (
        "def f(x):\n"
        "    here = __file__  # é\n"
        "    return torch.ops.vis.nms(x), torch.ops.aten.add(x, x), torch.ops.vis.qnms.default\n"
    )
    served = serve_module_file(serve_native_ops(chunk, {"vis": "vis-dist"}), "vis.ops.boxes")
    assert served == (
        "def f(x):\n"
        f"    here = {MODULE_FILE}('vis.ops.boxes')  # é\n"
        f"    return {TORCH_OPS}('vis', 'vis-dist').nms(x), torch.ops.aten.add(x, x), "
        f"{TORCH_OPS}('vis', 'vis-dist').qnms.default\n"
    )
    assert serve_module_file("def g(__file__):\n    return 1\n", "m") == (
        "def g(__file__):\n    return 1\n"
    )


def test_native_chunk_stands_in_for_an_operator_of_an_absent_distribution() -> None:
    """The block file's ``torch.ops.<ns>``: an absent operator of a distribution that is not
    installed is a function raising ModuleNotFoundError naming the operator and what to
    install; a registered operator is torch's own."""
    pytest.importorskip("torch")
    from nnrag.extract.dynimport import TORCH_OPS, native_chunk

    namespace: dict[str, object] = {"__file__": "block.py"}
    exec(compile(native_chunk(module_file=True), "<native>", "exec"), namespace)
    ops = cast("Callable[[str, str], ModuleType]", namespace[TORCH_OPS])
    absent = ops("nnrag_absent_namespace", "nnrag-absent-dist")
    assert ops("nnrag_absent_namespace", "nnrag-absent-dist") is absent
    with pytest.raises(ModuleNotFoundError) as called:
        absent.nms(1)
    assert str(called.value) == (
        "torch.ops.nnrag_absent_namespace.nms: an operator of the compiled extension of "
        "'nnrag-absent-dist', which is not installed; install 'nnrag-absent-dist' to run it"
    )
    assert ops("aten", "torch").add.__name__ == "add"
    module_file = cast("Callable[[str], str]", namespace["_nnrag_module_file"])
    assert module_file("nnrag_absent_namespace.extension") == "block.py"
