"""Golden cases of the LibCST codemods (``tests/codemods/<case>/before.py`` -> ``after.py``).

``vendor_*`` cases run :class:`VendorImports` (``nnrag vendor --rewrite-imports``) with the
targets below; ``inline_*`` cases run :class:`InlineSourceImports` (``nnrag check --fix``).
Regenerate the expected files with ``NNRAG_UPDATE_GOLDENS=1 pytest tests/unit/test_codemods.py``
and review the diff.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

pytest.importorskip("libcst")

from nnrag.vendoring.codemods import (
    CodemodError,
    InlineSourceImports,
    Target,
    VendorImports,
    run_codemod,
)

CASES = Path(__file__).resolve().parents[1] / "codemods"
UPDATE = os.environ.get("NNRAG_UPDATE_GOLDENS") == "1"

MLP = Target(module="vendor.blocks.Mlp", name="Mlp")
DROP = Target(module="vendor.blocks.DropPath", name="DropPath")
TARGETS = {
    "timm.layers.Mlp": MLP,  # a re-export
    "timm.layers.mlp.Mlp": MLP,  # where it is defined
    "timm.layers.DropPath": DROP,
    "timm.layers.drop.DropPath": DROP,
}
FLAT = {"timm.layers.DropPath": "DropPath", "timm.layers.drop.DropPath": "DropPath"}


def rewrite(name: str, code: str) -> tuple[str, list[str]]:
    if name.startswith("vendor_"):
        return run_codemod(code, lambda c: VendorImports(c, TARGETS.get), filename=name)
    return run_codemod(code, lambda c: InlineSourceImports(c, FLAT), filename=name)


@pytest.mark.parametrize("name", sorted(p.name for p in CASES.iterdir() if p.is_dir()))
def test_codemod_case(name: str) -> None:
    before = (CASES / name / "before.py").read_text()
    expected_file = CASES / name / "after.py"
    after, changes = rewrite(name, before)
    if UPDATE:
        expected_file.write_text(after)
    assert expected_file.is_file(), f"no after.py; run with NNRAG_UPDATE_GOLDENS=1 ({name})"
    assert after == expected_file.read_text()
    assert bool(changes) == (after != before)
    ast.parse(after)  # still Python
    again, more = rewrite(name, after)
    assert (again, more) == (after, [])  # idempotent


def test_no_source_name_survives_where_every_use_was_rewritten() -> None:
    after = (CASES / "vendor_module_alias_unused" / "after.py").read_text()
    assert "timm" not in after
    kept = (CASES / "vendor_module_alias_still_used" / "after.py").read_text()
    assert "import timm.layers as L" in kept  # L.trunc_normal_ still needs it


def test_a_file_that_does_not_parse_is_a_codemod_error() -> None:
    with pytest.raises(CodemodError, match=r"broken\.py: cannot rewrite"):
        run_codemod("def broken(:\n", lambda c: VendorImports(c, TARGETS.get), filename="broken.py")
