"""Scope-correct rewriting of one unit's text: renames, flat chains, inner imports, annotations.

The unit is parsed with :mod:`ast` and every name is resolved by the one scope model
(:mod:`nnrag.pyscope.scopes`: function locals, ``global``/``nonlocal``, class bodies that
functions do not see, comprehension scopes, defaults/decorators/annotations evaluated in
the enclosing scope); only the spans that change are replaced in the original text, so
comments and formatting are kept. This is what LibCST's ScopeProvider would give, at a
small fraction of its cost (measured on timm: ~0.3 s per class with LibCST, ~2 ms with ast).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from nnrag.pyscope.scopes import CALL, Access, ScopeTree, build_scopes, dotted_root

ReadKind = Literal["load", "call"]

KEEP_NAME = "_nnrag_original_name"
"""The decorator a renamed module-level ``def``/``class`` gets, innermost: it sets
``__name__``/``__qualname__`` back to the source's name before any other decorator, a
registry (``register_module()`` keys a class by ``cls.__name__``) or a repr reads it."""

KEEP_NAME_CHUNK = f'''def {KEEP_NAME}(name):
    """Give a definition renamed in this block file the name it has in its source (written by
    nnrag): decorators, registries and reprs read ``__name__``."""

    def keep(definition):
        definition.__name__ = definition.__qualname__ = name
        return definition

    return keep
'''


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
    unit (in a function, class body, ``try`` or ``if``) -> flat name of what it imports;
    (``"import a.b"``, local name) of an ``import a.b [as m]`` there -> a namespace's flat name."""
    package: str = ""
    """Package of the unit's module, to make relative imports absolute."""
    raises: Mapping[str, str] = field(default_factory=dict)
    """Flat name of a definition of a guarded module (:mod:`nnrag.extract.guards`) -> the
    guard variable holding the ``ImportError`` of that module's imports (``None``: none):
    an internal import of it inside the unit raises that error first, as the import did."""
    absent: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """Key of an internal import inside the unit (as in ``imported``) that raises in the
    original (:meth:`nnrag.index.symbols.Symbols.absent_import`) -> the exception it raises
    (``ModuleNotFoundError("No module named 'pkg.core'", name='pkg.core')``): the import
    becomes that ``raise``; in a function the names it binds stay local (annotated)."""

    moved: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(absolute module, name) of an internal ``from m import name`` inside a function, where
    ``m`` hands ``name`` out through its ``__getattr__`` from a module outside the sources ->
    the ``from <that module> import <name>`` it becomes, still inside the function
    (:meth:`nnrag.index.symbols.Symbols.lazy_export`)."""

    dead: frozenset[tuple[int, str]] = frozenset()
    """(line relative to the unit's first, local name) of the import bindings of a ``try``
    that never bind a name the block can read (:mod:`nnrag.extract.deadtry`): left out of
    their import (an import left with none becomes ``pass``)."""

    def __bool__(self) -> bool:
        return bool(
            self.load
            or self.call
            or self.defs
            or self.imported
            or self.absent
            or self.moved
            or self.dead
        )


def rewrite_unit(text: str, rewrite: Rewrite, *, stringify_annotations: bool = False) -> str:
    """``text`` (top-level statements) with module-level references renamed scope-correctly.

    Only references bound to the module-level name are touched: locals, parameters,
    attributes and keywords of the same spelling are not. A chain (``layers.Mlp``) is
    replaced whole by its flat name. An internal ``from m import x as y`` inside the unit
    becomes ``pass`` (or ``y = <flat>``), since ``x`` is inlined. With
    ``stringify_annotations`` every annotation becomes the string PEP 563 would have stored.
    """
    tree = ast.parse(text)
    scopes = build_scopes(tree)
    editor = _Editor(text, rewrite, stringify_annotations, scopes)
    try:
        for statement in tree.body:
            editor.visit(statement)
    finally:
        scopes.release()  # freed now, not by a later garbage collection
    return editor.result()


def absolute_module(package: str, level: int, module: str | None) -> str:
    """The absolute module of ``from <level dots><module> import ...`` written in ``package``."""
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, *([module] if module else [])])


# --------------------------------------------------------------------------- nodes

_FUNCTION_TYPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef})
_LEAVES = frozenset(
    {
        *(
            kind
            for base in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
            for kind in base.__subclasses__()
        ),
        ast.Constant,
        ast.Pass,
        ast.Break,
        ast.Continue,
        ast.alias,
    }
)
"""Node types with no child node that names anything (contexts, operators, constants)."""


def _children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` as a list, without its two generators."""
    found: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            found.append(value)
        elif isinstance(value, list):
            found.extend(item for item in value if isinstance(item, ast.AST))
    return found


def _parameters(args: ast.arguments) -> Iterator[ast.arg]:
    yield from args.posonlyargs
    yield from args.args
    if args.vararg:
        yield args.vararg
    yield from args.kwonlyargs
    if args.kwarg:
        yield args.kwarg


# --------------------------------------------------------------------------- the editor


class _Editor:
    """Walks one unit, collecting text edits ``(start, end, replacement)`` (char offsets)."""

    def __init__(self, text: str, rewrite: Rewrite, stringify: bool, scopes: ScopeTree) -> None:
        self.text = text
        self.scopes = scopes
        self.rewrite = rewrite
        self.stringify = stringify
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.edits: list[tuple[int, int, str]] = []
        self.annotations: list[tuple[int, int]] = []

    # -- positions ---------------------------------------------------------------------------

    def offset(self, line: int, col: int) -> int:
        text = self.lines[line - 1]
        if not text.isascii():
            col = len(text.encode("utf-8")[:col].decode("utf-8", errors="replace"))
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]  # a positioned node (stmt or expr): ast.AST declares no position
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]  # a positioned node (stmt or expr): ast.AST declares no position
        return start, end

    def replace(self, node: ast.AST, text: str) -> None:
        start, end = self.span(node)
        self.edits.append((start, end, text))

    def result(self) -> str:
        edits = self._fold_annotations(self.edits)
        out = self.text
        for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
            out = out[:start] + text + out[end:]
        return out

    def _fold_annotations(self, edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Each annotation becomes one string literal of its (edited) text."""
        if not self.annotations:
            return edits
        rest = list(edits)
        for start, end in self.annotations:
            inner = [e for e in rest if start <= e[0] and e[1] <= end]
            rest = [e for e in rest if not (start <= e[0] and e[1] <= end)]
            segment = self.text[start:end]
            for s, e, t in sorted(inner, reverse=True):
                segment = segment[: s - start] + t + segment[e - start :]
            source = ast.unparse(ast.parse(f"({segment})", mode="eval"))
            literal = f'"{source}"' if '"' not in source and "\\" not in source else repr(source)
            rest.append((start, end, literal))
        return rest

    # -- names ---------------------------------------------------------------------------

    def flat(self, kind: ReadKind, text: str) -> str | None:
        if kind == "call":
            return self.rewrite.call.get(text)
        # annotations of lazily annotated modules are call-time reads for the index but
        # sit outside function bodies: fall back to the call-time map.
        return self.rewrite.load.get(text, self.rewrite.call.get(text))

    def read(self, node: ast.Name) -> ReadKind | None:
        """``load``/``call`` if a read of ``node`` is the module-level name, else ``None``."""
        access = self.scopes.at(node)
        if not isinstance(access, Access) or access.target is not self.scopes.module:
            return None
        return "call" if access.time == CALL else "load"

    def name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            kind = self.read(node)
            flat = None if kind is None else self.flat(kind, node.id)
        elif self.scopes.binds_module_name(node):
            flat = self.rewrite.defs.get(node.id)
        else:
            flat = None
        if flat is not None:
            self.replace(node, flat)

    def define(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        """Rename a module-level ``def``/``class`` name (its keyword line holds the name); the
        definition keeps its source name as ``__name__`` (:data:`KEEP_NAME`)."""
        flat = self.rewrite.defs.get(node.name)
        if flat is None:
            return
        line = self.lines[node.lineno - 1]
        start = self.offset(node.lineno, node.col_offset)
        column = start - self.starts[node.lineno - 1]
        keyword = "class" if isinstance(node, ast.ClassDef) else "def"
        position = line.find(keyword, column)
        position = line.find(node.name, position + len(keyword))
        begin = self.starts[node.lineno - 1] + position
        self.edits.append((begin, begin + len(node.name), flat))
        indent = line[:column] if not line[:column].strip() else ""
        self.edits.append((start, start, f'@{KEEP_NAME}("{node.name}")\n{indent}'))

    # -- walking ---------------------------------------------------------------------------

    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        if kind is ast.Name:
            self.name(node)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.Attribute:
            self.attribute(node)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind in _LEAVES:
            return
        elif kind in _FUNCTION_TYPES:
            self.function(node)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.ClassDef:
            self.klass(node)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.Lambda:
            self.lambda_(node)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.Global:
            self.global_(node)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.Import or kind is ast.ImportFrom:
            self.import_(node)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.AnnAssign:
            assign: ast.AnnAssign = node  # type: ignore[assignment]  # kind is ast.AnnAssign, checked above
            self.annotation(assign.annotation)
            self.visit(assign.target)
            if assign.value is not None:
                self.visit(assign.value)
        else:
            for child in _children(node):
                self.visit(child)

    def annotation(self, node: ast.expr | None) -> None:
        if node is None:
            return
        if self.stringify:
            self.annotations.append(self.span(node))
        self.visit(node)

    def signature(self, args: ast.arguments, returns: ast.expr | None) -> None:
        for default in (*args.defaults, *args.kw_defaults):
            if default is not None:
                self.visit(default)
        for parameter in _parameters(args):
            self.annotation(parameter.annotation)
        self.annotation(returns)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.signature(node.args, node.returns)
        if self.scopes.binds_module_name(node):
            self.define(node)
        for statement in node.body:
            self.visit(statement)

    def lambda_(self, node: ast.Lambda) -> None:
        for default in (*node.args.defaults, *node.args.kw_defaults):
            if default is not None:
                self.visit(default)
        self.visit(node.body)

    def klass(self, node: ast.ClassDef) -> None:
        for expr in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.visit(expr)
        if self.scopes.binds_module_name(node):
            self.define(node)
        for statement in node.body:
            self.visit(statement)

    def attribute(self, node: ast.Attribute) -> None:
        found = dotted_root(node)
        if found is not None:
            chain, root = found
            kind = self.read(root)
            flat = None if kind is None else self.flat(kind, chain)
            if flat is not None:
                self.replace(node, flat)
                return
        self.visit(node.value)

    def global_(self, node: ast.Global) -> None:
        defs = self.rewrite.defs
        if any(name in defs for name in node.names):
            self.replace(node, "global " + ", ".join(defs.get(n, n) for n in node.names))

    def import_(self, node: ast.Import | ast.ImportFrom) -> None:
        """Internal from-imports become assignments/``pass``; renamed module names get ``as``;
        the bindings that never bind (``Rewrite.dead``) are left out."""
        dead = self.rewrite.dead
        module = None
        if isinstance(node, ast.ImportFrom):
            module = absolute_module(self.rewrite.package, node.level, node.module)
        keep: list[ast.alias] = []
        assigns: list[str] = []
        raised: list[str] = []
        renamed = False
        absent = ""
        moved: list[str] = []
        for position, alias in enumerate(node.names):
            local = alias.asname or alias.name.split(".")[0]
            if (node.lineno, local) in dead:
                renamed = True  # left out: the statement changes
                continue
            key = (f"import {alias.name}", local) if module is None else (module, alias.name)
            error = self.rewrite.absent.get(key)
            if error is not None:
                # the names before it stay bound, as Python binds them before it fails; the
                # names from it on are locals of a function still (an import binds them)
                absent = f"raise {error}"
                assigns += [
                    f"{other.asname or other.name.split('.')[0]}: object"
                    for other in node.names[position:]
                    if not self.scopes.binds_module_name(other)
                ]
                break
            target = (
                self.rewrite.defs.get(local, local)
                if self.scopes.binds_module_name(alias)
                else local
            )
            external = self.rewrite.moved.get(key)
            if external is not None:
                named = external.rsplit(" ", 1)[-1]
                moved.append(external if named == target else f"{external} as {target}")
                continue
            flat = self.rewrite.imported.get(key)
            if flat is not None:
                guard = self.rewrite.raises.get(flat)
                if guard is not None and guard not in raised:
                    raised.append(guard)
                if target != flat:
                    assigns.append(f"{target} = {flat}")
                continue
            if target != local and (alias.asname or "." not in alias.name):
                keep.append(ast.alias(name=alias.name, asname=target))
                renamed = True
            else:
                keep.append(alias)
        if len(keep) == len(node.names) and not renamed:
            return
        parts: list[str] = []
        if keep:
            if isinstance(node, ast.ImportFrom):
                statement: ast.stmt = ast.ImportFrom(
                    module=node.module, names=keep, level=node.level
                )
            else:
                statement = ast.Import(names=keep)
            parts.append(ast.unparse(statement))
        parts += moved
        parts += assigns
        if absent:
            parts.append(absent)
        start = self.span(node)[0]
        indent = self.text[self.text.rfind("\n", 0, start) + 1 : start]
        raising = (
            ""
            if indent.strip()
            else f"\n{indent}".join(
                f"if {guard} is not None:\n{indent}    raise {guard}" for guard in raised
            )
        )  # an import sharing its line with another statement: left as it was
        joined = "; ".join(parts) or "pass"
        self.replace(node, f"{raising}\n{indent}{joined}" if raising else joined)
