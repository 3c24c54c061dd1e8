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


class Carried:
    """The registries of the block file being probed (set once per sandbox child)."""

    tables: dict[str, dict[str, Any]] = {}  # noqa: RUF012 - one child probes one block
    key: str = "type"

    @classmethod
    def load(cls, manager: Any, module: Any, shims: list[dict[str, Any]] | None) -> None:
        """Ask every ``nnrag_registry_classes`` hook about ``module``."""
        from nnrag.builtin_plugins import DEFAULT_SHIMS

        shims = list(shims) if shims else [dict(s) for s in DEFAULT_SHIMS]
        tables: dict[str, dict[str, Any]] = {}
        for answer in manager.hook.nnrag_registry_classes(module=module, shims=shims):
            for name, table in (answer or {}).items():
                tables.setdefault(str(name), {}).update(table)
        cls.tables, cls.key = tables, type_key(shims)

    @classmethod
    def candidates(cls, words: tuple[str, ...]) -> list[tuple[str, type]]:
        """``(type string, class)`` of the registries named like ``words`` (else of all)."""
        named = [
            t for name, t in sorted(cls.tables.items()) if any(w in name.lower() for w in words)
        ]
        tables = named or [t for _, t in sorted(cls.tables.items())]
        seen: dict[str, type] = {}
        for table in tables:
            for key, value in sorted(table.items()):
                seen.setdefault(key, value)
        return list(seen.items())
