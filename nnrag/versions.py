"""Fingerprints of nnrag's own code: what cached analyses, extractions and results depend on."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

_PACKAGE = Path(__file__).parent

ANALYSIS_CODE = ("index/units.py", "pyscope", "model.py", "diagnostics.py")
"""Code that decides what the index stores for a file."""

EXTRACTION_CODE = (*ANALYSIS_CODE, "index", "extract", "blockfile")
"""Code that decides the emitted block file."""

VALIDATION_CODE = (
    "check",
    "diagnostics.py",
    "pyscope",
    "validate",
    "plugins.py",
    "hookspecs.py",
    "builtin_plugins.py",
    "recipes.py",
)
"""Code that decides a validation verdict (``validate`` includes the probe)."""


@functools.cache
def code_fingerprint(*parts: str) -> str:
    """SHA-1 over the source of the named parts of ``nnrag``: modules or whole subpackages.

    A subpackage counts with every ``.py`` file under it, so a new or renamed module
    changes the fingerprint. Computed once per process, so one run sees one version even
    while files are edited.
    """
    digest = hashlib.sha1(usedforsecurity=False)
    for part in parts:
        path = _PACKAGE / part
        if not path.exists():  # a moved module would silently drop out of the cache key
            raise ValueError(f"code_fingerprint: nnrag/{part} does not exist")
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(file.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            digest.update(file.read_bytes())
    return digest.hexdigest()
