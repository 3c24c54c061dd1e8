"""What ``nnrag vendor --rewrite-imports`` points at: manifest entries, import names, folders."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("libcst")

from nnrag.errors import ConfigError
from nnrag.vendor import ManifestEntry
from nnrag.vendoring.codemods import Target
from nnrag.vendoring.rewrite import find_manifest, package_name, targets_of


def entry(block_id: str, file: str) -> ManifestEntry:
    return ManifestEntry(
        id=block_id,
        file=file,
        spec="",
        source={"name": "timm", "kind": "pypi", "location": "timm==1.0.31"},
        origin="",
        revision="",
        files=(),
        license="MIT",
        requirements=(),
        digest="sha256:" + "0" * 64,
    )


ENTRIES = [entry("timm:timm.layers.mlp:Mlp", "Mlp.py"), entry("tv:tv.ops:Mlp", "Mlp_tv.py")]


def test_targets_match_where_a_block_was_defined() -> None:
    target = targets_of(ENTRIES, "vendor.blocks")
    assert target("timm.layers.mlp.Mlp") == Target(module="vendor.blocks.Mlp", name="Mlp")
    assert target("tv.ops.Mlp") == Target(module="vendor.blocks.Mlp_tv", name="Mlp")
    assert target("timm.layers.Mlp") is None  # a re-export needs the index
    assert target("timm.layers.mlp.GluMlp") is None


def test_targets_follow_re_exports_through_the_lookup() -> None:
    asked: list[tuple[str, str]] = []

    def lookup(found: ManifestEntry, qualified: str) -> tuple[str, str] | None:
        asked.append((found.id, qualified))
        return ("timm.layers.mlp", "Mlp") if qualified == "timm.layers.Mlp" else None

    target = targets_of(ENTRIES, "vendor.blocks", lookup=lookup)
    assert target("timm.layers.Mlp") == Target(module="vendor.blocks.Mlp", name="Mlp")
    assert target("timm.layers.Mlp") == Target(module="vendor.blocks.Mlp", name="Mlp")
    assert target("numpy.pi") is None  # not a source package: never looked up
    assert asked == [("timm:timm.layers.mlp:Mlp", "timm.layers.Mlp")]  # memoized


def test_package_name_is_the_dotted_path_from_the_project(tmp_path: Path) -> None:
    folder = tmp_path / "src" / "app" / "vendored"
    folder.mkdir(parents=True)
    assert package_name(folder, tmp_path) == "src.app.vendored"
    with pytest.raises(ConfigError, match="--module NAME"):
        package_name(tmp_path, folder)
    odd = tmp_path / "my-blocks"
    odd.mkdir()
    with pytest.raises(ConfigError, match="not an importable package path"):
        package_name(odd, tmp_path)


def test_find_manifest_wants_exactly_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no nnrag-blocks\.json under"):
        find_manifest(tmp_path)
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "nnrag-blocks.json").write_text("{}")
    (tmp_path / ".venv" / "x").mkdir(parents=True)
    (tmp_path / ".venv" / "x" / "nnrag-blocks.json").write_text("{}")  # never searched
    assert find_manifest(tmp_path) == tmp_path / "vendor"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "nnrag-blocks.json").write_text("{}")
    with pytest.raises(ConfigError, match="several vendored folders"):
        find_manifest(tmp_path)
