"""Scope-correct rewriting of one unit's text with LibCST (split out of :mod:`nnrag.emit`).

LibCST is imported on first use only: it takes ~0.3 s to import and most units are
copied verbatim.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Rewrite:
    """How one unit's text changes: names/chains read at load or call time, names bound."""

    load: Mapping[str, str] = field(default_factory=dict)
    """Name or dotted chain read outside function bodies -> flat name."""
    call: Mapping[str, str] = field(default_factory=dict)
    """Name or dotted chain read inside function bodies -> flat name."""
    defs: Mapping[str, str] = field(default_factory=dict)
    """Module-level name bound here (``class Mlp``, ``global x``) -> flat name."""
    imported: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(absolute module, name) of an internal ``from m import name`` written inside the
    unit (in a function, class body, ``try`` or ``if``) -> flat name of what it imports."""
    package: str = ""
    """Package of the unit's module, to make relative imports absolute."""

    def __bool__(self) -> bool:
        return bool(self.load or self.call or self.defs or self.imported)


def rewrite_unit(text: str, rewrite: Rewrite, *, stringify_annotations: bool = False) -> str:
    """``text`` (top-level statements) with module-level references renamed scope-correctly.

    Only references bound to the module-level name are touched: locals, parameters,
    attributes and keywords of the same spelling are not. A chain (``layers.Mlp``) is
    replaced whole by its flat name. An internal ``from m import x as y`` inside the unit
    becomes ``pass`` (or ``y = <flat>``), since ``x`` is inlined. With
    ``stringify_annotations`` every annotation becomes the string PEP 563 would have stored.
    """
    import libcst as cst
    from libcst.metadata import (
        BuiltinScope,
        FunctionScope,
        GlobalScope,
        MetadataWrapper,
        ScopeProvider,
    )

    wrapper = MetadataWrapper(cst.parse_module(text))
    scopes = wrapper.resolve(ScopeProvider)
    kinds: dict[int, str] = {}
    for scope in {scope for scope in scopes.values() if scope is not None}:
        inside = scope
        call = False
        while inside is not None and not isinstance(inside, GlobalScope):
            call = call or isinstance(inside, FunctionScope)
            inside = inside.parent
        for access in scope.accesses:
            if isinstance(access.node, cst.Name) and all(
                isinstance(ref.scope, (GlobalScope, BuiltinScope)) for ref in access.referents
            ):
                kinds[id(access.node)] = "call" if call else "load"
        if isinstance(scope, GlobalScope):
            for assignment in scope.assignments:
                node = getattr(assignment, "node", None)
                if isinstance(node, cst.Name):
                    kinds[id(node)] = "def"
                elif isinstance(node, (cst.ClassDef, cst.FunctionDef)):
                    kinds[id(node.name)] = "def"
                elif isinstance(node, cst.ImportFrom):
                    kinds[id(node)] = "def"
    transformer = _rewriter_class()(rewrite, kinds, stringify_annotations)
    code: str = wrapper.module.visit(transformer).code
    return code


def absolute_module(package: str, level: int, module: str | None) -> str:
    """The absolute module of ``from <level dots><module> import ...`` written in ``package``."""
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, *([module] if module else [])])


@functools.cache
def _rewriter_class() -> type[Any]:
    """The LibCST transformer, defined on first use."""
    import libcst as cst

    def dotted(node: cst.BaseExpression) -> tuple[str, cst.Name] | None:
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        parts.append(node.value)
        return ".".join(reversed(parts)), node

    def name_of(node: cst.BaseExpression) -> str:
        found = dotted(node)
        return found[0] if found else ""

    class Rewriter(cst.CSTTransformer):
        def __init__(self, rewrite: Rewrite, kinds: dict[int, str], stringify: bool) -> None:
            super().__init__()
            self.rewrite = rewrite
            self.kinds = kinds
            self.stringify = stringify

        def flat(self, node: cst.CSTNode, text: str) -> str | None:
            kind = self.kinds.get(id(node))
            if kind == "def":
                return self.rewrite.defs.get(text)
            if kind is None:
                return None
            if kind == "call":
                return self.rewrite.call.get(text)
            # annotations of lazily annotated modules are call-time reads for the index
            # but sit outside function bodies: fall back to the call-time map.
            return self.rewrite.load.get(text, self.rewrite.call.get(text))

        def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
            flat = self.flat(original_node, original_node.value)
            return updated_node if flat is None else updated_node.with_changes(value=flat)

        def leave_Attribute(
            self, original_node: cst.Attribute, updated_node: cst.Attribute
        ) -> cst.BaseExpression:
            found = dotted(original_node)
            if found is None:
                return updated_node
            chain, root = found
            flat = self.flat(root, chain)
            if flat is None or self.kinds.get(id(root)) == "def":
                return updated_node
            return cst.Name(value=flat, lpar=original_node.lpar, rpar=original_node.rpar)

        def leave_Global(self, original_node: cst.Global, updated_node: cst.Global) -> cst.Global:
            defs = self.rewrite.defs
            names = [
                item.with_changes(name=item.name.with_changes(value=defs[item.name.value]))
                if item.name.value in defs
                else item
                for item in updated_node.names
            ]
            return updated_node.with_changes(names=names)

        def leave_ImportFrom(
            self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
        ) -> cst.BaseSmallStatement | cst.FlattenSentinel[cst.BaseSmallStatement]:
            if not self.rewrite.imported or isinstance(updated_node.names, cst.ImportStar):
                return updated_node
            module = absolute_module(
                self.rewrite.package,
                len(updated_node.relative),
                name_of(updated_node.module) if updated_node.module else None,
            )
            module_level = self.kinds.get(id(original_node)) == "def"
            keep: list[cst.ImportAlias] = []
            assigns: list[tuple[str, str]] = []
            for alias in updated_node.names:
                attr = name_of(alias.name)
                flat = self.rewrite.imported.get((module, attr))
                if flat is None:
                    keep.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
                    continue
                local = attr
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                target = self.rewrite.defs.get(local, local) if module_level else local
                if target != flat:
                    assigns.append((target, flat))
            if len(keep) == len(updated_node.names):
                return updated_node
            statements: list[cst.BaseSmallStatement] = []
            if keep:
                statements.append(updated_node.with_changes(names=keep))
            for target, flat in assigns:
                statements.append(
                    cst.Assign(
                        targets=[cst.AssignTarget(target=cst.Name(target))],
                        value=cst.Name(flat),
                    )
                )
            if not statements:
                return cst.Pass()
            return statements[0] if len(statements) == 1 else cst.FlattenSentinel(statements)

        def leave_Annotation(
            self, original_node: cst.Annotation, updated_node: cst.Annotation
        ) -> cst.Annotation:
            if not self.stringify:
                return updated_node
            code = cst.Module(body=[]).code_for_node(updated_node.annotation)
            text = ast.unparse(ast.parse(f"({code})", mode="eval"))
            literal = f'"{text}"' if '"' not in text and "\\" not in text else repr(text)
            return updated_node.with_changes(annotation=cst.SimpleString(value=literal))

    return Rewriter
