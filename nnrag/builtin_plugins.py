"""Built-in parent-side nnrag plugin: the registry convention nnrag knows without a plugin."""

from __future__ import annotations

from typing import Any

from nnrag.hookspecs import hookimpl

DEFAULT_SHIMS: tuple[dict[str, Any], ...] = (
    {
        "attribute": "_module_dict",
        "type_key": "type",
        "scope": "scope",
        "parent": "parent",
        "default_scope": "DefaultScope",
    },
)


@hookimpl
def nnrag_registry_shims() -> list[dict[str, Any]]:
    """Registries that keep ``{type string: class}`` in ``_module_dict``, read a config
    dict's class from its ``type`` key and form a tree whose nodes name their ``scope`` and
    ``parent`` (``type='mmdet.CrossEntropyLoss'``), with a ``DefaultScope`` class that sets
    the scope builds start from: the OpenMMLab convention, written as a plugin so that
    another framework's is one more answer of this hook in a nnragfile."""
    return [dict(shim) for shim in DEFAULT_SHIMS]
