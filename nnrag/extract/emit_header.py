"""The import section, the external requirements and the provenance header of a block file."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nnrag.blockfile.header import render_header

if TYPE_CHECKING:
    from nnrag.extract.emit_cache import Entity
    from nnrag.index.build import Index
    from nnrag.model import Closure, ImportBinding, ModuleInfo

__all__ = [
    "external_requirements",
    "format_imports",
    "import_section",
    "provenance_header",
    "source_packages",
    "source_roots",
]


# --------------------------------------------------------------------------- imports


def import_section(module: str) -> int:
    """0 for the standard library, 1 for any other import."""
    top = module.split(".", 1)[0]
    return 0 if top in sys.stdlib_module_names else 1


def format_imports(entities: Mapping[Entity, ImportBinding], flat: Mapping[Entity, str]) -> str:
    """PEP 8 groups (stdlib, third-party); in each, ``import x`` lines then ``from x import``."""
    plain: list[set[str]] = [set(), set()]
    froms: list[dict[str, set[str]]] = [{}, {}]
    for entity, binding in entities.items():
        section = import_section(binding.module)
        local = flat.get(entity, binding.name)
        if binding.attr is None:
            top = binding.module.split(".", 1)[0]
            if local == binding.module or (local == top and binding.name == top):
                plain[section].add(f"import {binding.module}")
            else:
                plain[section].add(f"import {binding.module} as {local}")
        else:
            names = froms[section].setdefault(binding.module, set())
            names.add(binding.attr if local == binding.attr else f"{binding.attr} as {local}")
    sections: list[str] = []
    for section in (0, 1):
        lines = sorted(plain[section], key=_import_line_key)
        for module in sorted(froms[section], key=lambda m: (m.lower(), m)):
            ordered = sorted(froms[section][module], key=lambda n: (n != "*", n.lower(), n))
            line = f"from {module} import {', '.join(ordered)}"
            if len(line) > 100:
                inner = "".join(f"    {name},\n" for name in ordered)
                line = f"from {module} import (\n{inner})"
            lines.append(line)
        if lines:
            sections.append("\n".join(lines) + "\n")
    return "\n".join(sections)


def _import_line_key(line: str) -> tuple[str, str]:
    return (line.lower(), line)


# --------------------------------------------------------------------------- requirements


def external_requirements(
    bindings: Iterable[ImportBinding],
    *,
    exclude: frozenset[str] = frozenset(),
    roots: Sequence[Path] = (),
    native: Iterable[str] = (),
) -> tuple[str, ...]:
    """PEP 508 strings for the third-party top-level modules ``bindings`` import.

    Distribution names (``Pillow`` for ``PIL``), each with the version specifier the
    sources at ``roots`` declare for it, if any (:mod:`nnrag.blockfile.requirements`).
    Standard-library modules and ``exclude`` (the source packages) are left out, except the
    packages in ``native``: their compiled operators come from the installed distribution.
    """
    from nnrag.blockfile.requirements import requirements_for

    tops = {binding.module.split(".", 1)[0] for binding in bindings}
    wanted = [
        top
        for top in tops
        if top and top not in sys.stdlib_module_names and top not in exclude and top != "__future__"
    ]
    return requirements_for(sorted({*wanted, *native}), roots)


# --------------------------------------------------------------------------- header


def source_roots(index: Index, source: str, modules: Mapping[str, ModuleInfo]) -> tuple[Path, ...]:
    """Checkout folders of the block's source first, then of the other sources it inlines."""
    names = [source, *sorted({info.source for info in modules.values()} - {source})]
    return tuple(index.checkouts[name].root for name in names if name in index.checkouts)


def source_packages(
    index: Index, closure: Closure, modules: Mapping[str, ModuleInfo]
) -> frozenset[str]:
    sources = {closure.block.source} | {info.source for info in modules.values()}
    packages: set[str] = set()
    for source in sources:
        packages |= index.source_packages(source)
    return frozenset(packages)


def provenance_header(
    *,
    index: Index,
    closure: Closure,
    modules: Mapping[str, ModuleInfo],
    files: Iterable[tuple[str, str, str]],
    requirements: Sequence[str],
    digest: str,
) -> str:
    block = closure.block
    checkout = index.checkouts.get(block.source)
    if checkout is None:
        source, revision, license_ = f"{block.source} (unknown)", "unknown", None
    else:
        kind = checkout.spec.kind
        if kind == "git":
            source = f"{checkout.origin} @ {checkout.revision}"
        else:
            source = f"{checkout.origin} ({kind})"
        revision, license_ = checkout.revision, checkout.license
    return render_header(
        block_id=block.id,
        source=source,
        revision=revision,
        source_packages=source_packages(index, closure, modules),
        files=[(path, f"swh:1:cnt:{sha1}") for _, path, sha1 in files],
        license=license_,
        requires=requirements,
        digest=digest,
    )
