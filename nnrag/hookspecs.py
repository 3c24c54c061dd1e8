"""Hook specifications of nnrag's plugin manager (``pluggy``, project name ``nnrag``).

Two kinds of hooks, by where they run:

- **Parent hooks** run in the process that drives validation (the CLI, a pytest worker).
  They never see block code: they get names and plain data and return plain data
  (JSON values). ``nnrag_block_inputs``, ``nnrag_registry_shims`` and ``nnrag_result``.
- **Child hooks** run only in the sandbox child, after it is locked down, because they
  touch the block's own (untrusted) classes and objects. ``nnrag_input_candidates`` and
  ``nnrag_registry_classes``. The child loads the same plugins again (entry points and
  the project's ``nnragfile.py``), so one plugin module can implement both kinds.

A plugin is a module or object with functions named like the specs below, marked with
:data:`hookimpl`. Plugins come from the ``nnrag`` entry-point group and from a
``nnragfile.py`` beside repos.json.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from nnrag.model import ValidationResult

PROJECT = "nnrag"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --------------------------------------------------------------------------- parent hooks


@hookspec(firstresult=True)
def nnrag_block_inputs(block_id: str, class_name: str) -> dict[str, Any] | None:
    """Exact constructor arguments and forward inputs for one block (parent, plain data).

    Return ``None`` to leave the block to nnrag's probing, or a dict with any of ``args``,
    ``kwargs`` (constructor), ``inputs``, ``input_kwargs`` (forward). Values are JSON values
    in the recipe notation: a tensor is ``{"shape": [2, 8], "dtype": "float32"}``, a class
    ``{"__ref__": "module:Qualname"}``, an object ``{"__call__": {"__ref__": ...}, "args":
    [...], "kwargs": {...}}``. The first non-``None`` answer wins over repos.json ``hints``.
    """


@hookspec
def nnrag_registry_shims() -> list[dict[str, Any]]:
    """Describe how a framework's registries map type strings to classes (parent, plain data).

    Each item is a dict ``{"attribute": "_module_dict", "type_key": "type"}``: objects of
    the block file that have a mapping ``attribute`` from strings to classes are registries,
    and config dicts name their class under ``type_key``. Optional ``"scope"`` and
    ``"parent"`` name the attributes of a registry tree whose type strings may read
    ``scope.Type``. Optional ``"default_scope"`` names a class of the block file whose
    ``get_instance(name, scope_name=...)`` sets the scope builds start from; the child enters
    the block's own package with it, as the framework's runner does before building a model,
    once a build misses a type string.
    The child uses these descriptions to find the classes a block's closure carries for each
    registry.
    """
    raise NotImplementedError  # a specification: plugins implement it


@hookspec
def nnrag_result(block_id: str, result: ValidationResult) -> None:
    """Observe one block's result (parent), cached or not, in the CLI and in pytest alike."""


# --------------------------------------------------------------------------- child hooks


@hookspec
def nnrag_input_candidates(
    block: Any, params: list[Any], profile: Any, ctor: dict[str, Any]
) -> list[tuple[list[Any], dict[str, Any]]] | None:
    """Forward input candidates for a built block (sandbox child only), best first.

    ``block`` is the instantiated module, ``params`` the ``inspect.Parameter`` list of its
    ``forward``, ``profile`` the size profile in use and ``ctor`` its constructor keyword
    arguments. Return ``None`` to abstain, or a list of ``(inputs, input_kwargs)`` pairs in
    recipe notation. The answers of all plugins are tried in order (the last registered,
    e.g. the project's ``nnragfile.py``, first); a block that any plugin answered for gets
    no generic inputs, so its failure message is the plugin's.
    """


@hookspec
def nnrag_registry_classes(module: Any, shims: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Registries a block file carries (sandbox child only): ``{registry: {type: class}}``.

    ``module`` is the executed block file, ``shims`` the answers of
    :func:`nnrag_registry_shims`. Results of all plugins are merged.
    """
    raise NotImplementedError  # a specification: plugins implement it


__all__ = [
    "PROJECT",
    "hookimpl",
    "hookspec",
    "nnrag_block_inputs",
    "nnrag_input_candidates",
    "nnrag_registry_classes",
    "nnrag_registry_shims",
    "nnrag_result",
]
