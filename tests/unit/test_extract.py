"""Tests for nnrag.extract.block: write_block writes the file and its spec, atomically, once."""

from __future__ import annotations

import json
from pathlib import Path

from nnrag.blockfile.header import body_digest, render_header
from nnrag.extract.block import spec_path, write_block
from nnrag.model import BlockRef, Extracted, SourceFile

SHA = "0123456789abcdef0123456789abcdef01234567"


def make_extracted() -> Extracted:
    block = BlockRef(source="src", module="pkg.mlp", name="Mlp", path="pkg/mlp.py", line=1)
    body = "class Mlp:\n    pass\n"
    header = render_header(
        block_id=block.id,
        source="/somewhere (path)",
        revision="abc",
        source_packages=["pkg"],
        files=[("pkg/mlp.py", f"swh:1:cnt:{SHA}")],
        license=None,
        requires=[],
        digest=body_digest(body),
    )
    return Extracted(
        block=block,
        code=header + "\n" + body,
        digest=body_digest(body),
        requirements=(),
        files=(SourceFile(source="src", path="pkg/mlp.py", sha1=SHA),),
    )


def test_write_block(tmp_path: Path) -> None:
    extracted = make_extracted()
    path = write_block(extracted, tmp_path / "out")
    assert path == tmp_path / "out" / "Mlp.py"
    assert path.read_text("utf-8") == extracted.code
    spec = json.loads(spec_path(path).read_text("utf-8"))
    assert spec["id"] == extracted.block.id
    assert spec_path(path).name == "Mlp.spec.json"
    assert sorted(p.name for p in path.parent.iterdir()) == ["Mlp.py", "Mlp.spec.json"]
    assert {p.stat().st_mode & 0o777 for p in path.parent.iterdir()} == {0o644}


def test_write_block_is_idempotent_and_named(tmp_path: Path) -> None:
    extracted = make_extracted()
    first = write_block(extracted, tmp_path, filename="custom.py")
    stamp = first.stat().st_mtime_ns
    again = write_block(extracted, tmp_path, filename="custom.py")
    assert again == first == tmp_path / "custom.py"
    assert again.stat().st_mtime_ns == stamp  # unchanged content is not rewritten
    assert (tmp_path / "custom.spec.json").is_file()
