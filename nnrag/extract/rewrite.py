"""Scope-correct rewriting of one unit's text: renames, flat chains, inner imports, annotations.

The unit is parsed with :mod:`ast`; every name is resolved with Python's scoping rules
(function locals, ``global``/``nonlocal``, class bodies that functions do not see,
comprehension scopes, defaults/decorators/annotations evaluated in the enclosing scope),
and only the spans that change are replaced in the original text, so comments and
formatting are kept. This is what LibCST's ScopeProvider would give, at a small fraction
of its cost (measured on timm: ~0.3 s per class with LibCST, ~2 ms with ast).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

ReadKind = Literal["load", "call"]


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
    editor = _Editor(text, rewrite, stringify_annotations)
    module = _Scope("module", None)
    for statement in ast.parse(text).body:
        editor.visit(statement, module)
    return editor.result()


def absolute_module(package: str, level: int, module: str | None) -> str:
    """The absolute module of ``from <level dots><module> import ...`` written in ``package``."""
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, *([module] if module else [])])


# --------------------------------------------------------------------------- scopes

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_FUNCTION_TYPES = frozenset(_FUNCTIONS)
_COMPREHENSION_TYPES = frozenset(_COMPREHENSIONS)
_NAMED = frozenset({ast.ExceptHandler, ast.MatchAs, ast.MatchStar})
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


@dataclass(slots=True)
class _Scope:
    kind: Literal["module", "class", "function", "comprehension"]
    parent: _Scope | None
    locals: set[str] = field(default_factory=set)
    """Function/comprehension: names local to it. Class: names bound so far in its body."""
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    def binds_module_name(self, name: str) -> bool:
        """Whether a store of ``name`` here binds the module-level name."""
        return self.kind == "module" or name in self.globals

    def read(self, name: str) -> ReadKind | None:
        """``load``/``call`` if ``name`` read here is the module-level name, else ``None``."""
        scope: _Scope | None = self
        call = False
        while scope is not None:
            if scope.kind == "module":
                return "call" if call else "load"
            if scope.kind == "class":
                if scope is self and name in scope.locals:
                    return None
            elif name in scope.globals:
                return "call" if call or scope.kind == "function" else "load"
            elif name in scope.locals or name in scope.nonlocals:
                return None
            call = call or scope.kind == "function"
            scope = scope.parent
        return None


def _targets(node: ast.AST) -> Iterator[str]:
    """Names a store target binds (``a``, ``a, (b, *c)``)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            yield sub.id


def _function_locals(scope: _Scope, nodes: Iterable[ast.AST]) -> None:
    """Fill a function scope's locals/globals/nonlocals from its body (nested scopes aside)."""
    stack = list(nodes)
    add = scope.locals.add
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
                add(node.id)  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
            continue
        if kind in _LEAVES:
            continue
        if kind in _DEFINITIONS:
            add(node.name)  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
            stack.extend(node.decorator_list)  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
            if kind is not ast.ClassDef:
                args: ast.arguments = node.args  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
                stack.extend(d for d in (*args.defaults, *args.kw_defaults) if d)
            else:
                klass: ast.ClassDef = node  # type: ignore[assignment]  # kind is ast.ClassDef here (the else branch)
                stack.extend((*klass.bases, *(k.value for k in klass.keywords)))
            continue
        if kind is ast.Lambda:
            lambda_args: ast.arguments = node.args  # type: ignore[attr-defined]  # kind is ast.Lambda, checked above
            stack.extend(d for d in (*lambda_args.defaults, *lambda_args.kw_defaults) if d)
            continue
        if kind in _COMPREHENSION_TYPES:
            # only walrus targets inside a comprehension bind in the function
            stack.extend(n for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            continue
        if kind is ast.Global:
            scope.globals.update(node.names)  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
            continue
        if kind is ast.Nonlocal:
            scope.nonlocals.update(node.names)  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
            continue
        if kind is ast.Import or kind is ast.ImportFrom:
            for alias in node.names:  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
                if alias.name != "*":
                    add(alias.asname or alias.name.split(".")[0])
            continue
        if kind in _NAMED:
            if node.name:  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
                add(node.name)  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
        elif kind is ast.MatchMapping and node.rest:  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
            add(node.rest)  # type: ignore[attr-defined]  # narrowed by hand: kind is type(node), checked above
        stack.extend(_children(node))
    scope.locals -= scope.globals | scope.nonlocals


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


def _dotted(node: ast.expr) -> tuple[str, ast.Name] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts)), node


# --------------------------------------------------------------------------- the editor


class _Editor:
    """Walks one unit, collecting text edits ``(start, end, replacement)`` (char offsets)."""

    def __init__(self, text: str, rewrite: Rewrite, stringify: bool) -> None:
        self.text = text
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

    def name(self, node: ast.Name, scope: _Scope) -> None:
        if isinstance(node.ctx, ast.Load):
            kind = scope.read(node.id)
            flat = None if kind is None else self.flat(kind, node.id)
        elif scope.binds_module_name(node.id):
            flat = self.rewrite.defs.get(node.id)
        else:
            flat = None
        if flat is not None:
            self.replace(node, flat)

    def define(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        """Rename a module-level ``def``/``class`` name (its keyword line holds the name)."""
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

    # -- walking ---------------------------------------------------------------------------

    def visit(self, node: ast.AST, scope: _Scope) -> None:
        kind = type(node)
        if kind is ast.Name:
            self.name(node, scope)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.Attribute:
            self.attribute(node, scope)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind in _LEAVES:
            return
        elif kind in _FUNCTION_TYPES:
            self.function(node, scope)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.ClassDef:
            self.klass(node, scope)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.Lambda:
            self.lambda_(node, scope)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind in _COMPREHENSION_TYPES:
            self.comprehension(node, scope)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.Global:
            self.global_(node)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.Import or kind is ast.ImportFrom:
            self.import_(node, scope)  # type: ignore[arg-type]  # dispatched on kind = type(node) (exact types; mypy cannot narrow on it)
        elif kind is ast.AnnAssign:
            assign: ast.AnnAssign = node  # type: ignore[assignment]  # kind is ast.AnnAssign, checked above
            self.annotation(assign.annotation, scope)
            self.visit(assign.target, scope)
            if assign.value is not None:
                self.visit(assign.value, scope)
        else:
            for child in _children(node):
                self.visit(child, scope)

    def annotation(self, node: ast.expr | None, scope: _Scope) -> None:
        if node is None:
            return
        if self.stringify:
            self.annotations.append(self.span(node))
        self.visit(node, scope)

    def signature(self, args: ast.arguments, returns: ast.expr | None, scope: _Scope) -> None:
        for default in (*args.defaults, *args.kw_defaults):
            if default is not None:
                self.visit(default, scope)
        for parameter in _parameters(args):
            self.annotation(parameter.annotation, scope)
        self.annotation(returns, scope)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator, scope)
        self.signature(node.args, node.returns, scope)
        if scope.binds_module_name(node.name):
            self.define(node)
        inner = _Scope("function", scope)
        inner.locals.update(p.arg for p in _parameters(node.args))
        _function_locals(inner, node.body)
        for statement in node.body:
            self.visit(statement, inner)

    def lambda_(self, node: ast.Lambda, scope: _Scope) -> None:
        for default in (*node.args.defaults, *node.args.kw_defaults):
            if default is not None:
                self.visit(default, scope)
        inner = _Scope("function", scope)
        inner.locals.update(p.arg for p in _parameters(node.args))
        _function_locals(inner, [node.body])
        self.visit(node.body, inner)

    def klass(self, node: ast.ClassDef, scope: _Scope) -> None:
        for expr in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.visit(expr, scope)
        if scope.binds_module_name(node.name):
            self.define(node)
        body = _Scope("class", scope)
        for statement in node.body:
            self.visit(statement, body)
            bound = _Scope("function", None)
            _function_locals(bound, [statement])
            body.locals |= bound.locals

    def comprehension(self, node: ast.expr, scope: _Scope) -> None:
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]  # node is a comprehension (visit dispatches on its type)
        self.visit(generators[0].iter, scope)
        inner = _Scope("comprehension", scope)
        for generator in generators:
            inner.locals.update(_targets(generator.target))
        for position, generator in enumerate(generators):
            if position:
                self.visit(generator.iter, inner)
            for condition in generator.ifs:
                self.visit(condition, inner)
        if isinstance(node, ast.DictComp):
            self.visit(node.key, inner)
            self.visit(node.value, inner)
        else:
            self.visit(node.elt, inner)  # type: ignore[attr-defined]  # ListComp, SetComp and GeneratorExp each have elt

    def attribute(self, node: ast.Attribute, scope: _Scope) -> None:
        found = _dotted(node)
        if found is not None:
            chain, root = found
            kind = scope.read(root.id)
            flat = None if kind is None else self.flat(kind, chain)
            if flat is not None:
                self.replace(node, flat)
                return
        self.visit(node.value, scope)

    def global_(self, node: ast.Global) -> None:
        defs = self.rewrite.defs
        if any(name in defs for name in node.names):
            self.replace(node, "global " + ", ".join(defs.get(n, n) for n in node.names))

    def import_(self, node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        """Internal from-imports become assignments/``pass``; renamed module names get ``as``."""
        module = None
        if isinstance(node, ast.ImportFrom):
            module = absolute_module(self.rewrite.package, node.level, node.module)
        keep: list[ast.alias] = []
        assigns: list[str] = []
        renamed = False
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            target = (
                self.rewrite.defs.get(local, local) if scope.binds_module_name(local) else local
            )
            key = (f"import {alias.name}", local) if module is None else (module, alias.name)
            flat = self.rewrite.imported.get(key)
            if flat is not None:
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
        parts += assigns
        self.replace(node, "; ".join(parts) or "pass")
