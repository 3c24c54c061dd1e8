"""The message of a name another source's indexed release does not bind (a release mismatch)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nnrag.index.symbols import Resolution, Symbols, binding_for
from nnrag.model import ModuleInfo
from nnrag.sources.fetch import tree_version

if TYPE_CHECKING:
    from nnrag.index.build import Index

__all__ = ["release_mismatch"]


def release_mismatch(
    index: Index, symbols: Symbols, info: ModuleInfo, chain: str, found: Resolution
) -> str | None:
    """Why ``chain``, read in ``info``, is missing when the module it was looked up in
    (``found.module``) belongs to another source that binds the name in no way: the importing
    source was written for another release of that one (``from transformers.modeling_utils
    import apply_chunking_to_forward`` against a release that moved it to ``pytorch_utils``).
    ``None`` for anything else (a name missing from the importing source itself)."""
    home = found.module
    if found.kind != "missing" or found.reason != "unresolved" or home is None:
        return None
    if home.source == info.source:
        return None
    first = chain.split(".", 1)[0]
    units = [u for u in symbols.binders(info).get(first, ()) if not u.type_checking]
    binding = binding_for(units[-1], first) if units else None
    if binding is not None and binding.attr not in (None, "*"):
        statement = f"from {binding.module} import {binding.attr}"
    else:
        statement = f"{home.module}.{found.name}"
    checkout = index.checkouts.get(home.source)
    version = None
    if checkout is not None:
        version = checkout.revision if checkout.spec.kind == "pypi" else tree_version(checkout.root)
    release = f"source {home.source!r}" + (f", version {version}" if version else "")
    message = (
        f"`{statement}`: the indexed release of {home.module} ({release}) does not bind "
        f"{found.name!r} (the importing source was written for another release"
    )
    elsewhere = _defined_elsewhere(index, symbols, home, found.name)
    if elsewhere:
        verb = "defines" if len(elsewhere) == 1 else "define"
        message += f"; {' and '.join(elsewhere)} of that release {verb} it"
    return message + "): pin a matching release in repos.json or exclude the block"


def _defined_elsewhere(index: Index, symbols: Symbols, home: ModuleInfo, name: str) -> list[str]:
    """Modules of ``home``'s source and top package that define ``name`` (a hint, never a
    resolution): those ``home`` imports from, then the indexed ones, in a fixed order."""
    top = home.module.split(".", 1)[0]
    candidates: dict[str, ModuleInfo] = {}
    for unit in home.units:
        for binding in unit.imports:
            if binding.module.split(".", 1)[0] != top or binding.module in candidates:
                continue
            other = index.module(binding.module, prefer=home.source)
            if other is not None and other.source == home.source:
                candidates[other.module] = other
    for other in index.modules(home.source):
        if other.module.split(".", 1)[0] == top:
            candidates.setdefault(other.module, other)
    found = [
        module
        for module, other in candidates.items()
        if module != home.module
        and any(
            u.kind != "import" and not u.type_checking and name in u.assigns
            for u in symbols.binders(other).get(name, ())
        )
    ]
    return sorted(found)[:3]
