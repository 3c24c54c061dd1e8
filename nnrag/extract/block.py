"""Extraction: resolve a block and emit it; write the block file and its spec."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from nnrag.blockfile.spec import block_spec
from nnrag.extract.emit import emit
from nnrag.model import BlockRef, Extracted

if TYPE_CHECKING:
    from nnrag.index.build import Index


def extract(index: Index, block: BlockRef) -> Extracted:
    """The standalone file of ``block``: its closure (``nnrag.extract.resolve``) emitted."""
    from nnrag.extract.resolve import resolve

    started = time.perf_counter()
    extracted = emit(index, resolve(index, block))
    return replace(extracted, seconds=time.perf_counter() - started)


def spec_path(block_path: Path) -> Path:
    """Where the spec of a block file lives: ``Mlp.py`` -> ``Mlp.spec.json``."""
    return block_path.with_name(block_path.stem + ".spec.json")


def write_block(
    extracted: Extracted,
    out_dir: Path,
    *,
    filename: str | None = None,
    category: str | None = None,
) -> Path:
    """Write ``<Class>.py`` (or ``filename``) and ``<Class>.spec.json`` into ``out_dir``.

    Writes are atomic (temp file + rename) and skipped when the content is unchanged, so
    parallel workers writing the same block never see a half-written file.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / (filename or f"{extracted.block.name}.py")
    spec = json.dumps(block_spec(extracted, category=category), indent=2, sort_keys=True) + "\n"
    _write_if_changed(path, extracted.code)
    _write_if_changed(spec_path(path), spec)
    return path


def _write_if_changed(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(handle, 0o644)  # mkstemp makes 0600; a block file is an ordinary source file
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
