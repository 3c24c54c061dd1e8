"""Sandbox child, built-in plugin: the registries a block file carries, by the registry shims."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nnrag.hookspecs import hookimpl


@hookimpl
def nnrag_registry_classes(module: Any, shims: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{registry name: {type string: class}}`` for every object of ``module`` that a shim
    describes: it has a mapping ``attribute`` whose keys are strings and values classes
    (an empty one too: a build from it wants a class the file does not carry).

    Where a shim names the registries' ``scope`` and ``parent`` attributes, a registry that
    is not on every build path of its name (mmyolo's and mmdet's ``model`` registries, both
    children of mmengine's) gives its type strings as ``scope.Type``: the spelling that any
    registry of the tree resolves, where a plain ``Type`` resolves only in its own branch."""
    registries = _registries(module, shims)
    scoped = _off_the_shared_path(registries)
    found: dict[str, dict[str, Any]] = {}
    for registry in registries:
        prefix = f"{registry.scope}." if id(registry.obj) in scoped else ""
        table = found.setdefault(registry.name, {})
        table.update({prefix + key: value for key, value in registry.classes.items()})
    return found


@dataclass(frozen=True)
class _Registry:
    """One registry object of the block file, as a shim reads it."""

    name: str
    obj: object
    classes: dict[str, type]
    scope: str | None
    parent: object


def _registries(module: Any, shims: list[dict[str, Any]]) -> list[_Registry]:
    """The registry objects of ``module`` (each once, empty ones too: they are build paths)."""
    registries: dict[int, _Registry] = {}
    for variable, value in list(vars(module).items()):
        if isinstance(value, type) or id(value) in registries:
            continue
        for shim in shims:
            table = _attribute(value, shim["attribute"])
            if not isinstance(table, Mapping):
                continue
            name = _attribute(value, "name")
            scope = _attribute(value, shim["scope"]) if shim.get("scope") else None
            registries[id(value)] = _Registry(
                name=name if isinstance(name, str) else variable,
                obj=value,
                classes={
                    k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, type)
                },
                scope=scope if isinstance(scope, str) and scope else None,
                parent=_attribute(value, shim["parent"]) if shim.get("parent") else None,
            )
            break
    return list(registries.values())


def _attribute(value: object, name: str) -> object:
    try:
        return getattr(value, name, None)
    except Exception:  # a lazy object whose attribute access runs code
        return None


def _off_the_shared_path(registries: list[_Registry]) -> set[int]:
    """Ids of the scoped registries that are not an ancestor (or self) of every leaf registry
    of the same name: a block may build from a leaf where their plain type strings fail."""
    parents = {id(r.obj): r.parent for r in registries}
    off: set[int] = set()
    for name in {r.name for r in registries}:
        group = [r for r in registries if r.name == name]
        parent_ids = {id(r.parent) for r in group if r.parent is not None}
        leaves = [r for r in group if id(r.obj) not in parent_ids]
        paths = [_path_to_root(leaf.obj, parents) for leaf in leaves]
        off.update(id(r.obj) for r in group if r.scope and not all(id(r.obj) in p for p in paths))
    return off


def _path_to_root(registry: object, parents: dict[int, object]) -> set[int]:
    """Ids of ``registry`` and its ancestors (those the block file holds)."""
    path: set[int] = set()
    node: object = registry
    while node is not None and id(node) not in path:
        path.add(id(node))
        node = parents.get(id(node))
    return path


def type_key(shims: list[dict[str, Any]]) -> str:
    """The key config dicts name their class under (the first shim's, ``type`` by default)."""
    return next((str(s["type_key"]) for s in shims if s.get("type_key")), "type")


def enter_default_scope(module: Any, shims: list[dict[str, Any]], scope: str) -> bool:
    """Make ``scope`` (the block's own package) the scope ``module``'s registries build in
    first, as a framework's runner does before it builds a model (mmengine's ``Runner`` and
    ``init_default_scope``: ``DefaultScope.get_instance(name, scope_name='mmdet')``, so that
    a build from the root registry finds the package's own classes): through the class a
    shim names under ``default_scope``, when a registry of the file has that scope. Whether
    the scope was entered."""
    if not scope or not any(r.scope == scope for r in _registries(module, shims)):
        return False
    for shim in shims:
        name = shim.get("default_scope")
        holder = vars(module).get(name) if isinstance(name, str) else None
        enter = getattr(holder, "get_instance", None) if isinstance(holder, type) else None
        if callable(enter):
            try:
                enter("nnrag-probe", scope_name=scope)
            except Exception:  # the file's own class refused: build as a plain script does
                return False
            return True
    return False


class Carried:
    """The registries of the block file being probed (set once per sandbox child)."""

    tables: dict[str, dict[str, Any]] = {}  # noqa: RUF012 - one child probes one block
    key: str = "type"
    _scope: tuple[Any, list[dict[str, Any]], str] | None = None
    """What :meth:`enter_scope` needs: the module, the shims and the block's package."""

    @classmethod
    def load(
        cls, manager: Any, module: Any, shims: list[dict[str, Any]] | None, package: str = ""
    ) -> None:
        """Ask every ``nnrag_registry_classes`` hook about ``module``; keep what entering
        the block's ``package`` as the default scope takes (:meth:`enter_scope`)."""
        from nnrag.builtin_plugins import DEFAULT_SHIMS

        shims = list(shims) if shims else [dict(s) for s in DEFAULT_SHIMS]
        tables: dict[str, dict[str, Any]] = {}
        for answer in manager.hook.nnrag_registry_classes(module=module, shims=shims):
            for name, table in (answer or {}).items():
                tables.setdefault(str(name), {}).update(table)
        cls.tables, cls.key = tables, type_key(shims)
        cls._scope = (module, shims, package) if package else None

    @classmethod
    def enter_scope(cls) -> bool:
        """Enter the block's package as the registries' default scope, once, as the
        framework's runner would have (:func:`enter_default_scope`); whether it was entered
        now (a build that missed a type string is then worth one more try)."""
        if cls._scope is None:
            return False
        module, shims, package = cls._scope
        cls._scope = None
        return enter_default_scope(module, shims, package)

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
