"""nnrag's plugin manager: built-in plugins, the ``nnrag`` entry-point group and ``nnragfile.py``.

The parent (CLI, pytest worker) builds one :class:`Plugins` per workspace and calls only
parent hooks on it. The sandbox child builds its own manager from :meth:`Plugins.child_spec`
(module names and the nnragfile path, plain data) and calls the child hooks there, so a
hook that touches block code never runs in the parent.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pluggy

from nnrag import hookspecs
from nnrag.errors import ConfigError
from nnrag.model import BlockHints

GROUP = "nnrag"
"""Entry-point group of nnrag plugins (``[project.entry-points.nnrag]``)."""
NNRAGFILE = "nnragfile.py"
"""The project-local plugin, beside repos.json (like pytest's ``conftest.py``)."""
PARENT_BUILTINS = ("nnrag.builtin_plugins",)
"""Built-in plugins with parent hooks (plain data only; no torch)."""
CHILD_BUILTINS = ("nnrag.validate.probe.graph", "nnrag.validate.probe.registries")
"""Built-in plugins with child hooks (imported in the sandbox child only)."""


class _Manager(pluggy.PluginManager):
    """Also takes unmarked ``nnrag_*`` functions as hooks (as pytest does for ``pytest_*``),
    so an ``nnragfile.py`` needs no import of nnrag."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("nnrag_") and callable(getattr(plugin, name, None)):
            return cast(pluggy.HookimplOpts, {})  # pluggy fills in the defaults
        return opts


def new_manager() -> pluggy.PluginManager:
    """An empty manager that knows nnrag's hook specifications."""
    manager = _Manager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    return manager


def load_nnragfile(path: Path) -> ModuleType:
    """Execute a project's ``nnragfile.py`` as module ``nnragfile``; errors name the file."""
    name = f"nnragfile_{hashlib.sha1(str(path).encode(), usedforsecurity=False).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load the nnrag plugin file {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise ConfigError(
            f"{path}: the nnrag plugin file raised {type(error).__name__}: {error}; fix it or "
            "remove it (it is loaded because it sits beside repos.json)"
        ) from error
    sys.modules[name] = module
    return module


@functools.cache
def entry_point_specs() -> tuple[tuple[str, str, str], ...]:
    """``(name, module:attr, distribution version)`` of every installed ``nnrag`` plugin."""
    found = []
    for point in metadata.entry_points(group=GROUP):
        dist = getattr(point, "dist", None)
        version = f"{dist.name}=={dist.version}" if dist is not None else ""
        found.append((point.name, point.value, version))
    return tuple(sorted(found))


def load_object(value: str) -> Any:
    """``package.module:attr`` (or a module name) to the object it names."""
    module_name, _, attr = value.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in filter(None, attr.split(".")):
        target = getattr(target, part)
    return target


@dataclass(slots=True)
class Plugins:
    """The parent's plugin manager and what a sandbox child needs to rebuild its own."""

    manager: pluggy.PluginManager
    nnragfile: Path | None = None
    entry_points: tuple[tuple[str, str, str], ...] = ()
    _shims: list[dict[str, Any]] | None = field(default=None, repr=False)

    def block_inputs(self, block_id: str, class_name: str) -> BlockHints | None:
        """The first plugin answer for a block's inputs, as hints, or ``None``."""
        answer = self.manager.hook.nnrag_block_inputs(block_id=block_id, class_name=class_name)
        return None if answer is None else hints_from_answer(block_id, answer, "nnrag_block_inputs")

    def shims(self) -> list[dict[str, Any]]:
        """Registry descriptions from every plugin, checked to be plain JSON data."""
        if self._shims is None:
            shims: list[dict[str, Any]] = []
            for answer in self.manager.hook.nnrag_registry_shims():
                for item in answer or ():
                    if not isinstance(item, Mapping) or not isinstance(item.get("attribute"), str):
                        raise ConfigError(
                            f"an nnrag_registry_shims hook returned {item!r}; each item is a "
                            'dict like {"attribute": "_module_dict", "type_key": "type"}'
                        )
                    shims.append(json.loads(json.dumps(dict(item))))
            self._shims = shims
        return self._shims

    def observe(self, block_id: str, result: Any) -> None:
        """Tell every result observer about ``result``."""
        self.manager.hook.nnrag_result(block_id=block_id, result=result)

    def child_spec(self) -> dict[str, Any]:
        """What the sandbox child needs to load the same plugins (plain data)."""
        return {
            "entry_points": [value for _, value, _ in self.entry_points],
            "nnragfile": None if self.nnragfile is None else str(self.nnragfile),
            "shims": self.shims(),
        }

    def digest(self) -> str:
        """Changes when a plugin that can change a verdict changes (cache keys include it)."""
        text = json.dumps(
            {
                "entry_points": self.entry_points,
                "nnragfile": self.nnragfile.read_text(encoding="utf-8")
                if self.nnragfile is not None and self.nnragfile.is_file()
                else None,
                "shims": self.shims(),
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]


HINT_KEYS = frozenset({"args", "kwargs", "inputs", "input_kwargs"})


def hints_from_answer(block_id: str, value: object, hook: str) -> BlockHints:
    """A block-inputs hook's answer (pytest's or nnrag's) as :class:`BlockHints`."""
    if not isinstance(value, Mapping) or not set(value) <= HINT_KEYS:
        raise ConfigError(
            f"{hook} returned {value!r} for {block_id}; return None or a dict with the keys "
            f"{', '.join(sorted(HINT_KEYS))}"
        )
    try:
        json.dumps(dict(value))
    except (TypeError, ValueError) as error:
        raise ConfigError(
            f"{hook} returned a value for {block_id} that is not plain JSON ({error}); write "
            'tensors as {"shape": [2, 8], "dtype": "float32"} and objects as {"__call__": '
            '{"__ref__": "module:Class"}, "args": [...]} (the block is built in the sandbox)'
        ) from error
    inputs = value.get("inputs")
    return BlockHints(
        pattern=block_id,
        init_args=tuple(value.get("args", ())),
        init_kwargs=dict(value.get("kwargs", {})),
        inputs=None if inputs is None else tuple(inputs),
        input_kwargs=dict(value.get("input_kwargs", {})),
    )


def parent_plugins(repos_file: Path | None, *, entry_points: bool = True) -> Plugins:
    """The parent's plugins: built-ins, the ``nnrag`` entry points, ``nnragfile.py``."""
    manager = new_manager()
    for name in PARENT_BUILTINS:
        manager.register(importlib.import_module(name), name=f"builtin:{name}")
    points = entry_point_specs() if entry_points else ()
    for name, value, _ in points:
        try:
            manager.register(load_object(value), name=f"entry:{name}")
        except Exception as error:
            raise ConfigError(
                f"cannot load the nnrag plugin {name} = {value!r}: {type(error).__name__}: "
                f"{error}; fix or uninstall the distribution that declares it"
            ) from error
    nnragfile = None
    if repos_file is not None and (repos_file.parent / NNRAGFILE).is_file():
        nnragfile = (repos_file.parent / NNRAGFILE).resolve()
        manager.register(load_nnragfile(nnragfile), name=f"nnragfile:{nnragfile}")
    _check(manager)
    return Plugins(manager=manager, nnragfile=nnragfile, entry_points=points)


def child_manager(spec: Mapping[str, Any] | None) -> pluggy.PluginManager:
    """The sandbox child's manager (built-ins, then entry points, then ``nnragfile.py``)."""
    manager = new_manager()
    for name in CHILD_BUILTINS:
        manager.register(importlib.import_module(name), name=f"builtin:{name}")
    if spec is not None and not (spec.get("entry_points") or spec.get("nnragfile")):
        return builtin_child_manager()  # the common case, built once in the warm parent
    spec = spec or {}
    values: Sequence[str] = spec.get("entry_points") or ()
    for value in values:
        manager.register(load_object(value), name=f"entry:{value}")
    if spec.get("nnragfile"):
        path = Path(str(spec["nnragfile"]))
        manager.register(load_nnragfile(path), name=f"nnragfile:{path}")
    _check(manager)
    return manager


@functools.cache
def builtin_child_manager() -> pluggy.PluginManager:
    """The child manager without user plugins, built once (in the warm sandbox parent)."""
    return child_manager(None)


def _check(manager: pluggy.PluginManager) -> None:
    """Refuse hook functions that match no specification (a misspelt ``nnrag_*`` name)."""
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as error:
        known = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("nnrag_")))
        raise ConfigError(f"{error}; the nnrag hooks are: {known}") from error


__all__ = [
    "CHILD_BUILTINS",
    "GROUP",
    "HINT_KEYS",
    "NNRAGFILE",
    "PARENT_BUILTINS",
    "Plugins",
    "child_manager",
    "entry_point_specs",
    "hints_from_answer",
    "load_nnragfile",
    "new_manager",
    "parent_plugins",
]
