"""Vendoring logic on fake extractions: file names, manifest, overwrite rules, refresh."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nnrag.blockfile.header import body_digest, render_header
from nnrag.diagnostics import closure_problem
from nnrag.errors import BlockNotFoundError, ConfigError
from nnrag.model import BlockRef, Diagnostic, Extracted, Settings, SourceFile, SourceSpec
from nnrag.vendor import MANIFEST, diff_summary, read_manifest, refresh, vendor_blocks

SHA = "1" * 40


def extracted(block_id: str, body: str, *, problems: tuple[Diagnostic, ...] = ()) -> Extracted:
    source, module, name = block_id.split(":")
    header = render_header(
        block_id=block_id,
        source=f"/src/{source} (path)",
        revision="rev1",
        source_packages=[module.split(".")[0]],
        files=[(module.replace(".", "/") + ".py", f"swh:1:cnt:{SHA}")],
        license="MIT",
        requires=["torch>=2.1"],
        digest=body_digest(body),
    )
    return Extracted(
        block=BlockRef(source=source, module=module, name=name, path="x.py", line=1),
        code=header + "\n" + body,
        digest=body_digest(body),
        requirements=("torch>=2.1",),
        files=(SourceFile(source=source, path=module.replace(".", "/") + ".py", sha1=SHA),),
        problems=problems,
    )


@dataclass
class FakeWorkspace:
    """The Workspace members vendoring uses: settings, extract, category, build."""

    blocks: dict[str, Extracted]
    settings: Settings = field(
        default_factory=lambda: Settings(
            sources=(
                SourceSpec(name="timm", kind="git", location="file:///up/timm", ref="main"),
                SourceSpec(name="other", kind="path", location="/src/other"),
            ),
            cache_dir=Path("/cache"),
        )
    )
    built: int = 0

    def extract(self, query: str) -> Extracted:
        if query not in self.blocks:
            raise BlockNotFoundError(query)
        return self.blocks[query]

    def category(self, block: BlockRef) -> str:
        return "head" if block.name.endswith("Head") else "utility"

    def build(self) -> None:
        self.built += 1


MLP = "timm:timm.layers.mlp:Mlp"
OTHER_MLP = "other:other.nets:Mlp"
ATTN = "timm:timm.layers.attn:Attention"
BODY = "import torch\n\n\nclass Mlp(torch.nn.Module):\n    pass\n"


def vendor(ws: FakeWorkspace, ids: list[str], into: Path, *, force: bool = False) -> list[Any]:
    return vendor_blocks(ws, ids, into, force=force)  # type: ignore[arg-type]  # FakeWorkspace: only what vendor_blocks uses, not a Workspace


def test_vendor_writes_block_spec_and_manifest(tmp_path: Path) -> None:
    ws = FakeWorkspace({MLP: extracted(MLP, BODY)})
    (outcome,) = vendor(ws, [MLP], tmp_path / "blocks")
    assert outcome.action == "written"
    assert outcome.file == tmp_path / "blocks" / "Mlp.py"
    assert outcome.file.read_text() == ws.blocks[MLP].code
    spec = json.loads((tmp_path / "blocks" / "Mlp.spec.json").read_text())
    assert spec["id"] == MLP
    assert spec["category"] == "utility"
    manifest = json.loads((tmp_path / "blocks" / MANIFEST).read_text())
    (entry,) = manifest["blocks"]
    assert entry["id"] == MLP
    assert entry["file"] == "Mlp.py"
    assert entry["spec"] == "Mlp.spec.json"
    assert entry["digest"] == body_digest(BODY)
    assert entry["requirements"] == ["torch>=2.1"]
    assert entry["source"] == {
        "name": "timm",
        "kind": "git",
        "location": "file:///up/timm",
        "ref": "main",
        "paths": [],
    }
    assert entry["origin"] == "/src/timm (path)"
    assert entry["revision"] == "rev1"
    assert entry["files"] == [["timm/layers/mlp.py", f"swh:1:cnt:{SHA}"]]
    assert sorted(entry["definitions"]) == ["Mlp"]
    assert entry["definitions"]["Mlp"].startswith("sha256:")


def test_class_name_clash_gets_source_suffix(tmp_path: Path) -> None:
    ws = FakeWorkspace({MLP: extracted(MLP, BODY), OTHER_MLP: extracted(OTHER_MLP, BODY)})
    first, second = vendor(ws, [MLP, OTHER_MLP], tmp_path)
    assert (first.file.name, second.file.name) == ("Mlp.py", "Mlp_other.py")
    # a later run keeps the recorded names
    again = vendor(ws, [OTHER_MLP, MLP], tmp_path)
    assert [o.file.name for o in again] == ["Mlp_other.py", "Mlp.py"]
    assert [o.action for o in again] == ["unchanged", "unchanged"]
    assert len(read_manifest(tmp_path)) == 2


def test_source_names_are_file_name_safe(tmp_path: Path) -> None:
    owner = "huggingface/pytorch-image-models:timm.layers.mlp:Mlp"
    ws = FakeWorkspace({MLP: extracted(MLP, BODY), owner: extracted(owner, BODY)})
    _, second = vendor(ws, [MLP, owner], tmp_path)
    assert second.file == tmp_path / "Mlp_huggingface_pytorch_image_models.py"


def test_pristine_file_is_updated(tmp_path: Path) -> None:
    ws = FakeWorkspace({MLP: extracted(MLP, BODY)})
    vendor(ws, [MLP], tmp_path)
    ws.blocks[MLP] = extracted(MLP, BODY + "\nX = 1\n")
    (outcome,) = vendor(ws, [MLP], tmp_path)
    assert outcome.action == "updated"
    assert (tmp_path / "Mlp.py").read_text().endswith("X = 1\n")
    assert read_manifest(tmp_path)[0].digest == body_digest(BODY + "\nX = 1\n")


def test_hand_edited_file_is_not_overwritten_without_force(tmp_path: Path) -> None:
    ws = FakeWorkspace({MLP: extracted(MLP, BODY)})
    vendor(ws, [MLP], tmp_path)
    path = tmp_path / "Mlp.py"
    path.write_text(path.read_text().replace("pass", "x = 1"))
    edited = path.read_text()
    ws.blocks[MLP] = extracted(MLP, BODY + "\nY = 2\n")
    (outcome,) = vendor(ws, [MLP], tmp_path)
    assert outcome.action == "skipped"
    assert str(path) in outcome.reason
    assert "edited by hand" in outcome.reason
    assert "--force" in outcome.reason
    assert path.read_text() == edited
    assert read_manifest(tmp_path)[0].digest == body_digest(BODY)
    (forced,) = vendor(ws, [MLP], tmp_path, force=True)
    assert forced.action == "updated"
    assert path.read_text() == ws.blocks[MLP].code


def test_foreign_file_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "Mlp.py").write_text("# my own Mlp\n")
    ws = FakeWorkspace({MLP: extracted(MLP, BODY)})
    (outcome,) = vendor(ws, [MLP], tmp_path)
    assert outcome.action == "skipped"
    assert "not a pristine nnrag block file" in outcome.reason
    assert (tmp_path / "Mlp.py").read_text() == "# my own Mlp\n"
    assert read_manifest(tmp_path) == []


def test_block_that_does_not_close_is_not_vendored(tmp_path: Path) -> None:
    problem = closure_problem("unresolved-name", "name 'x' is not defined", where="a.py:1:1")
    ws = FakeWorkspace({ATTN: extracted(ATTN, BODY, problems=(problem,))})
    (outcome,) = vendor(ws, [ATTN], tmp_path)
    assert outcome.action == "skipped"
    assert "does not close" in outcome.reason
    assert "name 'x' is not defined" in outcome.reason
    assert not (tmp_path / "Attention.py").exists()
    (forced,) = vendor(ws, [ATTN], tmp_path, force=True)
    assert forced.action == "written"


def test_unknown_block_fails_and_others_go_on(tmp_path: Path) -> None:
    ws = FakeWorkspace({MLP: extracted(MLP, BODY)})
    missing, done = vendor(ws, ["Nope", MLP], tmp_path)
    assert (missing.action, done.action) == ("failed", "written")
    assert "nnrag list" in missing.reason


def test_malformed_manifest_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text('{"blocks": [{"file": "a.py"}]}')
    with pytest.raises(ConfigError, match=r"blocks\[0\]"):
        read_manifest(tmp_path)
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(ConfigError, match=r"nnrag-blocks\.json"):
        read_manifest(tmp_path)


def test_diff_summary_names_changed_definitions() -> None:
    old = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    new = "def a():\n    return 1\n\n\ndef b():\n    return 3\n\n\ndef c():\n    pass\n"
    summary, diff = diff_summary(old, new, name="x.py")
    assert summary == "+5 -1 lines in b, c"
    assert diff.startswith("--- a/x.py\n+++ b/x.py\n")


# --------------------------------------------------------------------------- refresh


def refresh_with(ws: FakeWorkspace, folder: Path, *, force: bool = False) -> list[Any]:
    return refresh(
        folder, cache_dir=Path("/cache"), force=force, make_workspace=lambda settings: ws
    )  # type: ignore[arg-type,return-value]  # FakeWorkspace stands in for a Workspace


def test_refresh_rewrites_pristine_and_keeps_edited(tmp_path: Path) -> None:
    ws = FakeWorkspace({MLP: extracted(MLP, BODY), ATTN: extracted(ATTN, "A = 1\n")})
    vendor(ws, [MLP, ATTN], tmp_path)
    edited_path = tmp_path / "Attention.py"
    edited_path.write_text(edited_path.read_text() + "B = 2\n")
    edited = edited_path.read_text()
    ws.blocks[MLP] = extracted(MLP, BODY.replace("pass", "def forward(self, x):\n        return x"))
    ws.blocks[ATTN] = extracted(ATTN, "A = 3\n")

    outcomes = {o.block_id: o for o in refresh_with(ws, tmp_path)}
    assert ws.built == 1  # both blocks come from one source: one workspace, built once
    assert outcomes[MLP].action == "updated"
    assert "upstream changed: +2 -1 lines in Mlp" in outcomes[MLP].reason
    assert "+        return x" in outcomes[MLP].diff
    assert (tmp_path / "Mlp.py").read_text() == ws.blocks[MLP].code
    # the user added B, upstream changed A: merged, definition by definition
    assert outcomes[ATTN].action == "merged"
    assert "took upstream's A, kept your edits" in outcomes[ATTN].reason
    new_header = ws.blocks[ATTN].code.split("\n\n", 1)[0]
    assert edited_path.read_text() == new_header + "\n\nA = 3\nB = 2\n"
    assert edited.endswith("\n\nA = 1\nB = 2\n")
    digests = {e.id: e.digest for e in read_manifest(tmp_path)}
    assert digests == {
        MLP: body_digest(ws.blocks[MLP].code.split("\n\n", 1)[1]),
        ATTN: body_digest("A = 3\n"),  # upstream's body: the user's B stays a visible edit
    }


def test_refresh_reports_conflicts_per_definition_and_writes_nothing(tmp_path: Path) -> None:
    ws = FakeWorkspace({ATTN: extracted(ATTN, "A = 1\n\n\nC = 5\n")})
    vendor(ws, [ATTN], tmp_path)
    path = tmp_path / "Attention.py"
    path.write_text(path.read_text().replace("A = 1", "A = 2").replace("C = 5", "C = 6"))
    edited = path.read_text()
    ws.blocks[ATTN] = extracted(ATTN, "A = 3\n\n\nC = 7\n")
    (outcome,) = refresh_with(ws, tmp_path)
    assert outcome.action == "skipped"
    assert "conflicts in A, C" in outcome.reason
    assert "-A = 2" in outcome.diff
    assert "+A = 3" in outcome.diff
    assert path.read_text() == edited
    assert read_manifest(tmp_path)[0].digest == body_digest("A = 1\n\n\nC = 5\n")
    (forced,) = refresh_with(ws, tmp_path, force=True)
    assert forced.action == "updated"
    assert path.read_text() == ws.blocks[ATTN].code


def test_refresh_unchanged(tmp_path: Path) -> None:
    ws = FakeWorkspace({MLP: extracted(MLP, BODY)})
    vendor(ws, [MLP], tmp_path)
    (outcome,) = refresh_with(ws, tmp_path)
    assert outcome.action == "unchanged"
    assert outcome.diff == ""


def test_refresh_reports_a_block_gone_upstream(tmp_path: Path) -> None:
    ws = FakeWorkspace({MLP: extracted(MLP, BODY)})
    vendor(ws, [MLP], tmp_path)
    del ws.blocks[MLP]
    (outcome,) = refresh_with(ws, tmp_path)
    assert outcome.action == "failed"
    assert (tmp_path / "Mlp.py").exists()


def test_refresh_without_manifest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="extract ID --into"):
        refresh(tmp_path, cache_dir=tmp_path)


def test_refresh_says_edited_here_when_only_the_local_copy_changed(tmp_path: Path) -> None:
    ws = FakeWorkspace({ATTN: extracted(ATTN, "A = 1\n")})
    vendor(ws, [ATTN], tmp_path)
    path = tmp_path / "Attention.py"
    path.write_text(path.read_text() + "B = 2\n")
    (outcome,) = refresh_with(ws, tmp_path)
    assert outcome.action == "unchanged"
    assert outcome.reason.startswith("edited here since nnrag wrote it (upstream unchanged;")
    assert "upstream changed" not in outcome.reason
    assert path.read_text().endswith("B = 2\n")


def test_vendored_files_are_world_readable(tmp_path: Path) -> None:
    ws = FakeWorkspace({ATTN: extracted(ATTN, "A = 1\n")})
    vendor(ws, [ATTN], tmp_path)
    modes = {path.name: path.stat().st_mode & 0o777 for path in tmp_path.iterdir()}
    assert modes
    assert set(modes.values()) == {0o644}, modes
