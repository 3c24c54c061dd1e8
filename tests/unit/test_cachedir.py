"""The cache folder's CACHEDIR.TAG: written once, recognised as nnrag's only."""

from __future__ import annotations

from pathlib import Path

from nnrag.cachedir import TAG_NAME, is_cache_dir, tag_cache_dir


def test_tagging_creates_the_folder_and_keeps_an_existing_tag(tmp_path: Path) -> None:
    cache = tmp_path / "a" / "cache"
    tag_cache_dir(cache)
    tag = cache / TAG_NAME
    assert tag.read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert is_cache_dir(cache)
    tag.write_text(tag.read_text() + "# kept\n")
    tag_cache_dir(cache)
    assert tag.read_text().endswith("# kept\n")


def test_another_tools_cache_tag_is_not_nnrags(tmp_path: Path) -> None:
    (tmp_path / TAG_NAME).write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n# created by pytest.\n"
    )
    assert not is_cache_dir(tmp_path)
    assert not is_cache_dir(tmp_path / "missing")
