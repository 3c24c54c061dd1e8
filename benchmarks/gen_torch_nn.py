"""Generate nnrag/data/torch_nn.json: every nn.Module subclass reachable in torch nn namespaces.

Run with the torch the table should describe (``python benchmarks/gen_torch_nn.py``). Discovery
and resolution read the table and never import torch themselves.

Besides each class's ``forward`` owner and abstract methods, the table lists the names torch
can reach a module's methods by (``module_names`` for ``nn.Module``; ``names`` per class for
what its other torch bases add): every name the class's torch bases define, and every
attribute name and identifier-like string spelled in the source files that define them
(``self._apply``, ``getattr(module, "extra_repr")``). Per-method reachability of module
classes (``nnrag/extract/methods.py``) always keeps a method of such a name.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "nnrag" / "data" / "torch_nn.json"
ROOTS = ("torch.nn", "torch.ao.nn", "torch.jit", "torch.nn.parallel")
SKIP_PARTS = ("test", "_testing")


def _walk(root: str) -> list[ModuleType]:
    """Import ``root`` and every submodule of it that imports cleanly."""
    modules: list[ModuleType] = []
    try:
        package = importlib.import_module(root)
    except Exception as error:  # a missing optional backend only shrinks the table
        print(f"skip {root}: {error}", file=sys.stderr)
        return modules
    modules.append(package)
    path = getattr(package, "__path__", None)
    if path is None:
        return modules
    for info in pkgutil.walk_packages(path, prefix=root + "."):
        if any(part in SKIP_PARTS for part in info.name.split(".")):
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except Exception as error:  # optional backends (e.g. quantized engines)
            print(f"skip {info.name}: {error}", file=sys.stderr)
    return modules


def _forward_owner(cls: type, base: type) -> str:
    """``"module"`` when ``forward`` is nn.Module's own placeholder, else ``"own"``."""
    for klass in cls.__mro__:
        if "forward" in vars(klass):
            return "module" if klass is base else "own"
    return "module"


_SPELLED: dict[str, frozenset[str]] = {}


def _spelled(path: str | None) -> frozenset[str]:
    """Attribute names and identifier-like strings written in the file at ``path``."""
    if path is None:
        return frozenset()
    if path not in _SPELLED:
        found: set[str] = set()
        try:
            tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError) as error:
            raise SystemExit(f"cannot read torch source {path}: {error}") from error
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.isidentifier()
            ):
                found.add(node.value)
        _SPELLED[path] = frozenset(found)
    return _SPELLED[path]


def _names(cls: type) -> set[str]:
    """The names torch can call a method of a ``cls`` instance by: what its torch classes
    define and what their source files spell."""
    found: set[str] = set()
    for klass in cls.__mro__:
        if klass is object or not klass.__module__.startswith("torch"):
            continue
        found.update(vars(klass))
        try:
            path = inspect.getsourcefile(klass)
        except TypeError:  # a builtin class: no source
            path = None
        found.update(_spelled(path))
    return found


def main() -> int:
    """Write the table and print a one-line summary."""
    import torch

    base = torch.nn.Module
    module_names = _names(base)
    classes: dict[str, dict[str, Any]] = {}
    aliases: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        modules: dict[str, ModuleType] = {}
        for root in ROOTS:
            for module in _walk(root):
                modules[module.__name__] = module
    for name in sorted(modules):
        module = modules[name]
        for attr, value in sorted(vars(module).items()):
            if not (inspect.isclass(value) and issubclass(value, base)):
                continue
            qualified = f"{value.__module__}.{value.__qualname__}"
            aliases.setdefault(f"{name}.{attr}", qualified)
            if qualified in classes:
                continue
            abstract = sorted(getattr(value, "__abstractmethods__", ()))
            classes[qualified] = {
                "forward": _forward_owner(value, base),
                "abstract": abstract,
                "names": sorted(_names(value) - module_names),
            }
    for qualified in classes:
        aliases.setdefault(qualified, qualified)
    table = {
        "torch": torch.__version__.split("+")[0],
        "generator": "benchmarks/gen_torch_nn.py",
        "module": "torch.nn.modules.module.Module",
        "module_names": sorted(module_names),
        "classes": dict(sorted(classes.items())),
        "aliases": dict(sorted(aliases.items())),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(table, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(classes)} classes, {len(aliases)} names (torch {table['torch']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
