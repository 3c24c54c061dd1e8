"""Digest of every block file extracted from the example corpora, to compare two checkouts.

Indexes timm 1.0.31, torchvision 0.29.1 and torch-geometric 2.8.1 (local copies under
/work/corpora/src, as ``path`` sources) from a clean cache, extracts every discovered block
with ``write_block`` (block ``.py`` plus its neutral spec ``.json``) and prints one JSON line:
the SHA-256 over the sorted ``(relative path, file SHA-256)`` pairs of the ``.py`` files, of
all files, the counts, and a per-file listing written beside the output folder.

Works with the flat layout (before commit a1f4fc0) and with the package layout, so the same
script measures both: run it with ``PYTHONPATH`` set to the checkout under test.

    PYTHONPATH=/work/wt/old nice python benchmarks/layout_digest.py /tmp/digest-old
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

CORPORA = {
    "timm": ("/work/corpora/src/timm-1.0.31", "timm"),
    "torchvision": ("/work/corpora/src/torchvision-0.29.1", "torchvision"),
    "torch_geometric": ("/work/corpora/src/torch_geometric-2.8.1", "torch_geometric"),
}


def _extract_api() -> tuple[Any, Any]:
    """``extract`` and ``write_block`` from whichever layout is on the path."""
    try:
        from nnrag.extract.block import extract, write_block
    except ImportError:  # the flat layout before a1f4fc0
        from nnrag.extract import extract, write_block
    return extract, write_block


def main(work: Path) -> dict[str, object]:
    """Extract every block of the corpora under ``work`` and digest the files."""
    import nnrag
    from nnrag.config import load_settings
    from nnrag.errors import NnragError
    from nnrag.workspace import Workspace

    extract, write_block = _extract_api()
    cache, out = work / "cache", work / "blocks"
    cache.mkdir(parents=True)
    repos = cache / "repos.json"
    sources = [
        {"name": name, "path": path, "paths": [pkg]} for name, (path, pkg) in CORPORA.items()
    ]
    repos.write_text(json.dumps({"sources": sources}), encoding="utf-8")
    started = time.perf_counter()
    workspace = Workspace(load_settings(repos, cache_dir=cache, environ={}))
    workspace.build()
    index = workspace.index()
    errors: list[str] = []
    for block in workspace.blocks():
        try:
            extracted = extract(index, block)
        except NnragError as error:
            errors.append(f"{block.id}: {type(error).__name__}")
            continue
        write_block(extracted, out / block.source / block.module)
    files = sorted(p for p in out.rglob("*") if p.is_file())
    listing = [(str(p.relative_to(out)), hashlib.sha256(p.read_bytes()).hexdigest()) for p in files]
    (work / "files.tsv").write_text("".join(f"{h}\t{r}\n" for r, h in listing), encoding="utf-8")

    def digest(rows: list[tuple[str, str]]) -> str:
        return hashlib.sha256("".join(f"{h}  {r}\n" for r, h in rows).encode()).hexdigest()

    py = [row for row in listing if row[0].endswith(".py")]
    return {
        "nnrag": str(Path(nnrag.__file__).parent),
        "blocks": len(workspace.blocks()),
        "py_files": len(py),
        "all_files": len(listing),
        "extract_errors": errors,
        "py_digest": digest(py),
        "all_digest": digest(listing),
        "seconds": round(time.perf_counter() - started, 1),
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
