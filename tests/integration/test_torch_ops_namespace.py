"""An operator a source's compiled extension registers (``torch.ops.pkg.op``): the block is
closed, and the operator comes from the installed distribution or fails as native-op."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from nnrag.extract.block import extract
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import validate_file
from tests.unit.test_cases import case_index, target_block

pytestmark = pytest.mark.integration

CASE = "emit_torch_ops_of_the_source"


def _block_file(tmp_path: Path, name: str) -> Path:
    index = case_index(CASE)
    path = tmp_path / f"{name}.py"
    path.write_text(extract(index, target_block(index, f"boxops.ops.nms:{name}")).code)
    return path


@pytest.mark.parametrize(
    ("name", "stage", "category"),
    [("Suppress", None, None), ("FusedSuppress", "forward", "native-op")],
)
def test_absent_distribution_fails_where_the_operator_is_called(
    sandbox: Sandbox, tmp_path: Path, name: str, stage: str | None, category: str | None
) -> None:
    """Without ``boxops`` installed, Suppress's path that does not call the operator passes
    forward; FusedSuppress imports and builds, then fails at forward as native-op, naming
    the operator and the distribution to install."""
    result = validate_file(
        _block_file(tmp_path, name),
        block_id=f"src:boxops.ops.nms:{name}",
        class_name=name,
        depth="forward",
        source_packages=frozenset({"boxops"}),
        sandbox=sandbox,
    )
    assert (result.failed_stage, result.category) == (stage, category), result.message
    if category is None:
        assert result.passed, result.message
    else:
        assert result.stage_reached == "instantiate"
        assert "torch.ops.boxops.nms: an operator of the compiled extension of 'boxops'" in (
            result.message
        )
        assert "install 'boxops'" in result.message


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Path]:
    """A distribution ``boxops`` on ``sys.path`` whose import registers ``boxops::nms``
    (with ``torch.library``, as a compiled extension's import would)."""
    root = tmp_path / "site"
    package = root / "boxops"
    package.mkdir(parents=True)
    (package / "extension.py").write_text("")
    (package / "__init__.py").write_text(
        "import torch\n"
        "LIBRARY = torch.library.Library('boxops', 'DEF')\n"
        "LIBRARY.define('nms(Tensor boxes, Tensor scores, float threshold) -> Tensor')\n"
        "LIBRARY.impl('nms', lambda boxes, scores, threshold: scores.argsort(), "
        "'CompositeExplicitAutograd')\n"
    )
    sys.path.insert(0, str(root))
    try:
        yield package
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("boxops", None)


def test_installed_distribution_provides_the_operator(installed: Path, tmp_path: Path) -> None:
    """With ``boxops`` installed, the first use of the operator imports the package (which
    registers it, as importing the original does) and calls the real operator; the inlined
    loader reads the installed module's ``__file__``, where its library would be."""
    import torch

    loader = _load(_block_file(tmp_path, "Suppress"))
    assert loader._nnrag_module_file("boxops.extension") == str(installed / "extension.py")
    fused = _load(_block_file(tmp_path, "FusedSuppress"))
    scores = torch.tensor([0.1, 0.9, 0.5])
    assert fused.FusedSuppress()(torch.zeros(3, 4), scores).tolist() == [0, 2, 1]
    assert "boxops" in sys.modules


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"block_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("stage", ["import", "instantiate", "forward", "backward"])
def test_a_missing_torch_operator_is_native_op(stage: str) -> None:
    """torch's own error for an operator nobody registered (``'_OpNamespace' 'ns' object has
    no attribute 'op'``), a library's "couldn't load custom C++ ops" guard, and the block
    file's stand-in are all ``native-op``, also when the namespace is a source package."""
    import torch

    from nnrag.extract.dynimport import TORCH_OPS, native_chunk
    from nnrag.validate.probe.outcomes import classify

    errors: list[BaseException] = [RuntimeError("Couldn't load custom C++ ops. Reinstall it.")]
    with pytest.raises(AttributeError) as missing:
        torch.ops.nnrag_unregistered_namespace.nms(torch.zeros(1))
    errors.append(missing.value)
    namespace: dict[str, object] = {}
    exec(compile(native_chunk(module_file=False), "<native>", "exec"), namespace)
    ops = namespace[TORCH_OPS]
    assert callable(ops)
    with pytest.raises(ModuleNotFoundError) as stand_in:
        ops("nnrag_unregistered_namespace", "nnrag-dist").nms()
    errors.append(stand_in.value)
    sources = frozenset({"nnrag_unregistered_namespace"})
    assert [classify(error, stage, [], sources) for error in errors] == ["native-op"] * 3
