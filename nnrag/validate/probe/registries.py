"""Sandbox child, built-in plugin: the registries a block file carries, by the registry shims."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nnrag.hookspecs import hookimpl


@hookimpl
def nnrag_registry_classes(module: Any, shims: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{registry name: {type string: class}}`` for every object of ``module`` that a shim
    describes: it has a mapping ``attribute`` whose keys are strings and values classes."""
    found: dict[str, dict[str, Any]] = {}
    for variable, value in list(vars(module).items()):
        if isinstance(value, type):
            continue
        for shim in shims:
            try:
                table = getattr(value, shim["attribute"], None)
            except Exception:  # a lazy object whose attribute access runs code
                continue
            if not isinstance(table, Mapping) or not table:
                continue
            classes = {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, type)}
            if classes:
                name = getattr(value, "name", None)
                found.setdefault(name if isinstance(name, str) else variable, {}).update(classes)
    return found


def type_key(shims: list[dict[str, Any]]) -> str:
    """The key config dicts name their class under (the first shim's, ``type`` by default)."""
    return next((str(s["type_key"]) for s in shims if s.get("type_key")), "type")
