"""Fingerprints of nnrag's own code: what cached analyses, extractions and results depend on."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

_PACKAGE = Path(__file__).parent

ANALYSIS_MODULES = ("units", "bindings", "model")
"""Modules whose code decides what the index stores for a file."""

EXTRACTION_MODULES = (
    *ANALYSIS_MODULES,
    "discover",
    "symbols",
    "needs",
    "effects",
    "resolve",
    "namespaces",
    "rewrite",
    "emit_cache",
    "emit",
    "header",
    "extract",
)
"""Modules whose code decides the emitted block file."""

VALIDATION_MODULES = (
    "checks",
    "check_compile",
    "scoping",
    "validate",
    "sandbox",
    "lockdown",
    "probe",
    "probe_args",
    "probe_inputs",
    "probe_graph",
    "probe_repair",
    "probe_repair_names",
    "probe_screen",
    "probe_reshape",
    "probe_values",
)
"""Modules whose code decides a validation verdict."""


@functools.cache
def code_fingerprint(*modules: str) -> str:
    """SHA-1 over the source of the named ``nnrag`` modules (missing ones count as empty).

    Computed once per process, so one run sees one version even while files are edited.
    """
    digest = hashlib.sha1(usedforsecurity=False)
    for name in modules:
        file = _PACKAGE / f"{name}.py"
        digest.update(name.encode() + b"\0")
        digest.update(file.read_bytes() if file.exists() else b"")
    return digest.hexdigest()
