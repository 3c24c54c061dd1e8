"""The cache folder's tag: a ``CACHEDIR.TAG`` (https://bford.info/cachedir/) that says the
folder is nnrag's cache, so backup tools skip it and pytest never collects the checkouts and
block files inside it (sdists ship ``tests/*_test.py``), wherever the cache lies."""

from __future__ import annotations

import contextlib
from pathlib import Path

__all__ = ["TAG_NAME", "is_cache_dir", "tag_cache_dir"]

TAG_NAME = "CACHEDIR.TAG"
_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
_TAG = f"{_SIGNATURE}\n# This file is a cache directory tag created by nnrag.\n"


def tag_cache_dir(cache_dir: Path) -> None:
    """Create ``cache_dir`` if needed and tag it (once; an existing tag is left alone)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    tag = cache_dir / TAG_NAME
    if not tag.exists():
        with contextlib.suppress(OSError):  # a read-only cache works without its tag
            tag.write_text(_TAG, encoding="utf-8")


def is_cache_dir(folder: Path) -> bool:
    """Whether ``folder`` is a cache folder nnrag tagged."""
    try:
        return "created by nnrag" in (folder / TAG_NAME).read_text(encoding="utf-8")[:200]
    except (OSError, UnicodeDecodeError):  # no tag (or a folder named like one)
        return False
