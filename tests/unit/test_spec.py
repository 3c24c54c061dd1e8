"""Tests for nnrag.blockfile.spec: the neutral JSON block spec."""

from __future__ import annotations

import json

from nnrag.blockfile.header import body_digest, render_header
from nnrag.blockfile.spec import block_spec, docstring_summary
from nnrag.diagnostics import closure_problem
from nnrag.model import BlockRef, Diagnostic, Extracted, SourceFile

SHA = "0123456789abcdef0123456789abcdef01234567"


def make_extracted(problems: tuple[Diagnostic, ...] = ()) -> Extracted:
    block = BlockRef(
        source="timm",
        module="timm.layers.mlp",
        name="Mlp",
        path="timm/layers/mlp.py",
        line=12,
        docstring="MLP as used in Vision Transformer.\n\n  Second paragraph.",
        init_signature="in_features, hidden_features=None",
        forward_signature="x",
    )
    body = "class Mlp:\n    pass\n"
    header = render_header(
        block_id=block.id,
        source="timm==1.0.31 (pypi)",
        revision="1.0.31",
        source_packages=["timm"],
        files=[("timm/layers/mlp.py", f"swh:1:cnt:{SHA}")],
        license="Apache-2.0",
        requires=["torch>=2.13.0"],
        digest=body_digest(body),
    )
    return Extracted(
        block=block,
        code=header + "\n" + body,
        digest=body_digest(body),
        requirements=("torch>=2.13.0",),
        files=(SourceFile(source="timm", path="timm/layers/mlp.py", sha1=SHA),),
        problems=problems,
        dependencies=("timm.layers.helpers.to_2tuple",),
    )


def test_spec_fields() -> None:
    spec = block_spec(make_extracted())
    assert spec["id"] == "timm:timm.layers.mlp:Mlp"
    assert spec["class_name"] == "Mlp"
    assert spec["summary"] == "MLP as used in Vision Transformer."
    assert spec["init_signature"] == "in_features, hidden_features=None"
    assert spec["dependencies"] == ["timm.layers.helpers.to_2tuple"]
    assert spec["requirements"] == ["torch>=2.13.0"]
    assert spec["license"] == "Apache-2.0"
    assert spec["closed"] is True
    provenance = spec["provenance"]
    assert isinstance(provenance, dict)
    assert provenance["source"] == "timm==1.0.31 (pypi)"
    assert provenance["revision"] == "1.0.31"
    assert provenance["files"] == [
        {"source": "timm", "path": "timm/layers/mlp.py", "swhid": f"swh:1:cnt:{SHA}"}
    ]


def test_spec_is_json_without_source_text() -> None:
    problem = closure_problem(
        "unresolved-name", "name 'x'", where="m.py:3:5", dependency_path=("Mlp", "f")
    )
    spec = block_spec(make_extracted((problem,)))
    text = json.dumps(spec, sort_keys=True)
    assert "class Mlp" not in text
    assert spec["closed"] is False
    assert spec["problems"] == [
        {
            "code": "NNR501",
            "category": "unresolved-name",
            "message": "name 'x'",
            "path": ["Mlp", "f"],
            "location": "m.py:3:5",
        }
    ]


def test_docstring_summary() -> None:
    assert docstring_summary(None) is None
    assert docstring_summary("   ") is None
    assert docstring_summary("One line\n  continued.\n\nMore.") == "One line continued."


def test_spec_category_is_keyword_with_null_default() -> None:
    assert block_spec(make_extracted())["category"] is None
    spec = block_spec(make_extracted(), category="normalization")
    assert spec["category"] == "normalization"
    assert json.loads(json.dumps(spec))["category"] == "normalization"
