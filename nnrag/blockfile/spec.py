"""The neutral block spec: a JSON description of an extracted block, without source text."""

from __future__ import annotations

from nnrag.blockfile.header import parse_header
from nnrag.model import Extracted
from nnrag.report import diagnostic_json

SPEC_VERSION = 1


def docstring_summary(docstring: str | None) -> str | None:
    """The first paragraph of a docstring, on one line (``None`` when there is none)."""
    if not docstring:
        return None
    paragraph = docstring.strip().split("\n\n", 1)[0]
    summary = " ".join(line.strip() for line in paragraph.splitlines()).strip()
    return summary or None


def block_spec(extracted: Extracted, *, category: str | None = None) -> dict[str, object]:
    """The spec of ``extracted``: identity, category, signatures, dependencies, provenance.

    ``category`` is the block's primary category (``Workspace.category``), ``null`` if unknown.

    Only JSON values; deterministic for the same extraction (the validator adds probed
    shapes and the parameter count under ``"probe"`` later).
    """
    block = extracted.block
    header = parse_header(extracted.code)
    return {
        "spec_version": SPEC_VERSION,
        "id": block.id,
        "source": block.source,
        "module": block.module,
        "class_name": block.name,
        "category": category,
        "path": block.path,
        "line": block.line,
        "init_signature": block.init_signature,
        "forward_signature": block.forward_signature,
        "summary": docstring_summary(block.docstring),
        "dependencies": list(extracted.dependencies),
        "requirements": list(extracted.requirements),
        "closed": extracted.closed,
        "problems": [diagnostic_json(p) for p in extracted.problems],
        "provenance": {
            "source": header.source if header else None,
            "revision": header.revision if header else None,
            "source_packages": list(header.source_packages) if header else [],
            "files": [
                {"source": f.source, "path": f.path, "swhid": f.swhid} for f in extracted.files
            ],
        },
        "license": header.license if header else "UNKNOWN",
        "digest": extracted.digest,
    }
