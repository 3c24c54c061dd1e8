"""Dynamic lookups in one unit's syntax that a closure cannot follow: namespace reads by
string, imports by name, module-level registry dicts read with a key computed at run time."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from nnrag.diagnostics import closure_problem
from nnrag.extract.dynimport import DUNDER_SHIM, SHIM, import_by_name
from nnrag.extract.syntax import (
    dotted,
    is_empty_container,
    may_find,
    parent_map,
    reads_namespace,
    writes,
)
from nnrag.index.symbols import Symbols
from nnrag.model import Category, Diagnostic, ImportBinding, ModuleInfo, Unit

if TYPE_CHECKING:
    from nnrag.index.build import Index

__all__ = ["DynamicLookups", "Finding", "Registry", "UnitSyntax"]

_DYNAMIC_ROOTS = frozenset({"getattr", "globals", "vars", "eval", "exec", "__import__"})
_DYNAMIC_ROOTS |= frozenset({"importlib", "sys", "import_module"})


Finding = tuple[Diagnostic, "Registry | None"]
"""A closure problem found in one unit's syntax (position absolute in the file, col 1-based),
and for a registry lookup, the registry (its home registrations are inlined)."""


class UnitSyntax(Protocol):
    """A unit's text and its statements parsed alone (:class:`nnrag.extract.needs.UnitScanner`)."""

    def text(self, info: ModuleInfo, unit: Unit) -> str: ...
    def tree(self, info: ModuleInfo, unit: Unit) -> ast.Module | None: ...


class DynamicLookups:
    """Per-index memo of each unit's dynamic lookups, and of the registries of the index."""

    def __init__(self, index: Index, syntax: UnitSyntax) -> None:
        self.index = index
        self.syntax = syntax
        self._findings: dict[tuple[str, str, int], tuple[Finding, ...]] = {}
        self._registries: dict[tuple[str, str, str], Registry | None] = {}
        self._by_attr: dict[str, list[tuple[ModuleInfo, ImportBinding]]] | None = None

    def findings(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> tuple[Finding, ...]:
        """Dynamic lookups in ``unit`` that a closure cannot follow (memoized)."""
        key = (info.source, info.module, unit.index)
        cached = self._findings.get(key)
        if cached is not None:
            return cached
        reads = (*unit.load_reads, *unit.call_reads)
        roots = {chain.split(".", 1)[0] for chain in reads}
        found: list[Finding] = []
        registries = {
            root: registry
            for root in sorted(roots)
            if (registry := self._registry(info, unit, root, symbols)) is not None
        }
        if registries or (roots & _DYNAMIC_ROOTS and may_find(self.syntax.text(info, unit), roots)):
            tree = self.syntax.tree(info, unit)
            if tree is not None:
                found.extend(self._visit(tree, info, unit, symbols, registries))
        result = tuple(found)
        self._findings[key] = result
        return result

    def _visit(
        self,
        tree: ast.Module,
        info: ModuleInfo,
        unit: Unit,
        symbols: Symbols,
        registries: Mapping[str, Registry],
    ) -> Iterator[Finding]:
        reads = set(unit.load_reads) | set(unit.call_reads)

        def at(node: ast.expr, category: Category, message: str) -> Finding:
            where = f"{info.path}:{unit.start_line + node.lineno - 1}:{node.col_offset + 1}"
            return closure_problem(category, message, where=where), None

        found_parents: dict[int, ast.AST] = {}

        def parents() -> dict[int, ast.AST]:
            """Each node's parent, built on first use (only ``globals()``/``vars()`` need it)."""
            if not found_parents:
                found_parents.update(parent_map(tree))
            return found_parents

        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = dotted(node.func)
                if name in ("getattr", "vars", "dir") and node.args and name in reads:
                    # an internal module object (``vars(aggr)``) becomes a namespace of its
                    # public names (see resolve); the module's own namespace cannot
                    target = dotted(node.args[0])
                    if target == "sys.modules[__name__]":
                        yield at(
                            node,
                            "dynamic-registry",
                            f"{name}({target}{', ...' if name == 'getattr' else ''}) looks names "
                            "up in a source module at "
                            "run time; only the definitions the closure found are inlined",
                        )
                elif (
                    name in ("globals", "vars")
                    and not node.args
                    and name in reads
                    and reads_namespace(node, parents())
                ):
                    yield at(
                        node,
                        "dynamic-registry",
                        f"{name}() reads the module namespace by string; only the definitions "
                        "the closure found are inlined",
                    )
                elif name in ("importlib.import_module", "import_module", "__import__"):
                    yield from self._dynamic_import(node, info, at)
                elif (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr == "get"
                    and dotted(node.func.value) in registries
                    and node.args
                    and not isinstance(node.args[0], ast.Constant)
                ):
                    yield _registry_use(
                        at(node, "dynamic-registry", ""), registries, node.func.value
                    )
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and dotted(node.value) in registries
                and not isinstance(node.slice, ast.Constant)
            ):
                yield _registry_use(at(node, "dynamic-registry", ""), registries, node.value)

    def _dynamic_import(self, node: ast.Call, info: ModuleInfo, at: _At) -> Iterator[Finding]:
        found = import_by_name(node, lambda name: self.index.source_of_module(name) is not None)
        if found is None:
            return
        if not found.served:  # ``__import__``: kept as written
            if found.exact:
                yield at(node, "source-import", f"imports {found.module!r} of the source by name")
            else:
                yield at(
                    node,
                    "dynamic-registry",
                    "imports a module of the source chosen at run time; it cannot be inlined",
                )
        elif found.exact:
            yield at(
                node,
                "dynamic-registry",
                f"imports {found.module!r} of the source by name: the block file resolves it "
                f"to the definitions it carries ({DUNDER_SHIM if found.below else SHIM}); a "
                "name it does not carry fails at run time",
            )
        else:
            yield at(
                node,
                "dynamic-registry",
                "imports a module of the source chosen at run time"
                + (f" ({found.module}*)" if found.module else "")
                + f": the block file resolves it against the modules it carries ({SHIM}); "
                "any other raises ModuleNotFoundError (a private one, a compiled extension, "
                "is imported where installed, else raises when one of its functions is called)",
            )

    def _registry(
        self, info: ModuleInfo, reader: Unit, root: str, symbols: Symbols
    ) -> Registry | None:
        """The registry module-level dict ``root`` is, if a function of its module fills it."""
        found = symbols.lookup(info, root)
        if found.kind != "definition" or found.module is None or len(found.units) != 1:
            return None
        home, unit = found.module, found.units[0]
        key = (home.source, home.module, found.name)
        if key in self._registries:
            registry = self._registries[key]
        else:
            registry = None
            if unit.kind == "assign":
                registry = self._find_registry(home, unit, found.name, symbols)
            self._registries[key] = registry
        if registry is None or (home.module == info.module and registry.writer in reader.binds):
            return None  # a cache filled by the function that reads it
        return registry

    def _find_registry(
        self, home: ModuleInfo, unit: Unit, name: str, symbols: Symbols
    ) -> Registry | None:
        tree = self.syntax.tree(home, unit)
        if tree is None or len(tree.body) != 1 or not is_empty_container(tree.body[0]):
            return None
        for other in home.units:
            if other.kind != "def" or not any(
                c == name or c.startswith(name + ".") for c in other.call_reads
            ):
                continue
            body = self.syntax.tree(home, other)
            if body is None or not writes(body, name) or not other.binds:
                continue
            writer = other.binds[0]
            registrations = tuple(
                u
                for u in home.units
                if u is not other
                and any(c == writer or c.startswith(writer + ".") for c in u.load_reads)
            )
            elsewhere = sorted(
                {
                    module.module
                    for module, binding in self._importers().get(writer, ())
                    if module.module != home.module
                    and symbols.lookup(module, binding.name).key == (home.module, writer)
                }
            )
            return Registry(
                name=name,
                home=home,
                writer=writer,
                registrations=registrations,
                elsewhere=tuple(elsewhere),
            )
        return None

    def _importers(self) -> dict[str, list[tuple[ModuleInfo, ImportBinding]]]:
        """Imported attribute name -> (module, binding) of every ``from x import name``."""
        if self._by_attr is None:
            found: dict[str, list[tuple[ModuleInfo, ImportBinding]]] = {}
            for info in self.index.modules():
                for unit in info.units:
                    for binding in (*unit.imports, *unit.local_imports):
                        if binding.attr and binding.attr != "*":
                            found.setdefault(binding.attr, []).append((info, binding))
            self._by_attr = found
        return self._by_attr


@dataclass(frozen=True, slots=True)
class Registry:
    """A module-level dict filled by a function (``@register``) and looked up by key."""

    name: str
    home: ModuleInfo
    writer: str
    registrations: tuple[Unit, ...]
    """Units of the home module that call the writer at load time (they fill the dict)."""
    elsewhere: tuple[str, ...]
    """Other modules that import the writer: their registrations are not in the closure."""


_At = Callable[[ast.expr, Category, str], Finding]


def _registry_use(where: Finding, registries: Mapping[str, Registry], node: ast.expr) -> Finding:
    registry = registries[dotted(node) or ""]
    message = (
        f"looks up {registry.name!r} (a registry filled by {registry.writer}()) with a key "
        f"computed at run time; entries registered in {', '.join(registry.elsewhere[:3])}"
        + (
            f" and {len(registry.elsewhere) - 3} more modules"
            if len(registry.elsewhere) > 3
            else ""
        )
        + " are not inlined"
    )
    return closure_problem(where[0].category, message, where=where[0].location), registry
