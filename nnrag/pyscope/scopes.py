"""The one scope model: a tree of Python scopes with positioned assignments and accesses.

Shaped like LibCST's ``ScopeProvider`` (a scope tree per module, each scope with its
assignments and accesses) but built on :mod:`ast` in one walk, for speed. Python's
visibility rules (listed in :mod:`nnrag.pyscope.tree`) are written here and there once.

Two views of a name follow from the tree: the compiler's classification per scope
(:attr:`Scope.symbols`: local, cell, free, global explicit or implicit; computed with the
algorithm of CPython 3.10/3.11's ``symtable.c``, which the oracle test compares against
:mod:`symtable`), and the run-time binding an access reads (:attr:`Access.target`: the scope
whose binding it reads; the module scope means module-level or builtin).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from nnrag.pyscope.statements import StatementWalk
from nnrag.pyscope.tree import (
    CALL,
    CELL,
    EVALUATED,
    FREE,
    FUNCTION_LIKE,
    GLOBAL_EXPLICIT,
    GLOBAL_IMPLICIT,
    LAZY,
    LOAD,
    LOCAL,
    NOT_ANNOTATION,
    Access,
    Assignment,
    BodyFilter,
    Read,
    Scope,
    ScopeKind,
    ScopeTree,
    SkipBody,
    analyze,
    dotted,
    dotted_root,
    is_type_checking,
)

__all__ = [
    "CALL",
    "CELL",
    "EVALUATED",
    "FREE",
    "GLOBAL_EXPLICIT",
    "GLOBAL_IMPLICIT",
    "LAZY",
    "LOAD",
    "LOCAL",
    "NOT_ANNOTATION",
    "Access",
    "Assignment",
    "BodyFilter",
    "Read",
    "Scope",
    "ScopeTree",
    "SkipBody",
    "Walker",
    "build_scopes",
    "dotted",
    "dotted_root",
    "is_type_checking",
]

_SKIP_FIELDS = frozenset(
    {"ctx", "op", "ops", "type_comment", "type_params"}
    # fields that hold strings or numbers, never a node: not worth a getattr
    | {"arg", "attr", "id", "level", "module", "is_async", "simple", "conversion", "kind"}
    | {"kwd_attrs"}
)
_Deferred = tuple["ast.FunctionDef | ast.AsyncFunctionDef", list[ast.arg], Scope, int, bool, bool]
_TYPE_ALIAS: type[ast.AST] | None = getattr(ast, "TypeAlias", None)  # Python >= 3.12
_TRY_STAR: type[ast.AST] | None = getattr(ast, "TryStar", None)  # Python >= 3.11
_Load, _Store, _Name, _Attribute = ast.Load, ast.Store, ast.Name, ast.Attribute
_COMPREHENSION_NAMES: dict[type[ast.AST], str] = {
    ast.ListComp: "listcomp",
    ast.SetComp: "setcomp",
    ast.DictComp: "dictcomp",
    ast.GeneratorExp: "genexpr",
}


def build_scopes(
    tree: ast.Module, *, compiler: bool = True, bodies: BodyFilter | None = None
) -> ScopeTree:
    """The scope tree of a parsed module.

    With ``compiler``, each scope's :attr:`Scope.symbols` (the compiler's classification)
    is computed too; without, it stays empty (the index needs only run-time bindings).
    With ``bodies``, the bodies of the defs that run at load time (top-level functions,
    methods) are walked last, and ``bodies(the tree without them)`` says which to leave out
    (no scope for them; their decorators, defaults, annotations and names are walked); it
    must not release that tree, which the walk then completes.
    """
    walker = Walker(tree, compiler=compiler, defer=bodies is not None)
    for top, statement in enumerate(tree.body):
        walker.top = top
        walker.visit(statement)
    module = walker.module
    if bodies is not None:
        walker.walk_deferred(bodies(ScopeTree(module, walker.future, walker.imports)))
    walker.dispatch = {}  # its bound methods hold the walker (and so the tree) in a cycle
    if compiler:
        analyze(module, None, set())
    return ScopeTree(module, walker.future, walker.imports)


# --------------------------------------------------------------------------- the walk


class Walker(StatementWalk):
    """One walk of a module in execution order, building the scope tree."""

    def __init__(self, tree: ast.Module, *, compiler: bool, defer: bool = False) -> None:
        self.compiler = compiler
        self.deferred: list[_Deferred] | None = [] if defer else None
        """Defs whose bodies wait for :meth:`walk_deferred` (with ``defer``)."""
        self.future: list[str] = []
        for statement in tree.body:
            if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
                self.future.extend(alias.name for alias in statement.names)
        self.lazy = "annotations" in self.future
        self.module = Scope("module", tree, "top", 0, None)
        self.scope = self.module
        self.imports: list[Assignment] = []
        self.order = 0
        self.top = 0
        self.time = LOAD
        self.annotation = NOT_ANNOTATION
        self.compiler_sees = compiler
        """Whether symtable records the reads being walked (not in PEP 563 annotations)."""
        self.conditional = False
        self.type_checking = False
        self.fields: dict[type[ast.AST], tuple[str, ...]] = {}
        self.dispatch: dict[type[ast.AST], Callable[[Any], None]] = {
            ast.Name: self._name,
            ast.Attribute: self._attribute,
            ast.Constant: self._nothing,
            ast.Lambda: self._lambda,
            ast.ClassDef: self._class,
            ast.NamedExpr: self._namedexpr,
            ast.Global: self._global,
            ast.Nonlocal: self._nonlocal,
            ast.Assign: self._assign,
            ast.AnnAssign: self._annassign,
            ast.AugAssign: self._augassign,
            ast.If: self._if,
            ast.ExceptHandler: self._handler,
            ast.MatchMapping: self._match_mapping,
            ast.BinOp: self._binop,
            ast.Call: self._call,
            ast.Subscript: self._subscript,
            ast.Compare: self._compare,
        }
        for kinds, handler in (
            ((ast.FunctionDef, ast.AsyncFunctionDef), self._function),
            (tuple(_COMPREHENSION_NAMES), self._comprehension),
            ((ast.Import, ast.ImportFrom), self._import),
            ((ast.For, ast.AsyncFor), self._for),
            ((ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match), self._conditional),
            ((ast.MatchAs, ast.MatchStar), self._match_capture),
            ((ast.Expr, ast.Return, ast.Starred), self._value),
            ((ast.Tuple, ast.List, ast.Set), self._elements),
        ):
            self.dispatch.update(dict.fromkeys(kinds, handler))
        if _TRY_STAR is not None:
            self.dispatch[_TRY_STAR] = self._conditional
        if _TYPE_ALIAS is not None:
            self.dispatch[_TYPE_ALIAS] = self._type_alias

    # -- names -----------------------------------------------------------------------------

    def _read(self, name: str, chain: str, node: ast.Name) -> None:
        scope = self.scope
        order = self.order
        self.order = order + 1
        scope.reads.append(
            (name, chain, node, order, self.top, self.time, self.annotation, name in scope.earlier)
        )
        if self.compiler_sees:
            scope.used.add(name)
            if name == "super" and scope.kind in FUNCTION_LIKE:
                scope.used.add("__class__")

    def _bind(
        self,
        name: str,
        node: ast.AST,
        kind: str,
        statement: ast.stmt | None = None,
        *,
        into: Scope | None = None,
        record: bool = True,
    ) -> Assignment:
        """Record a binding written in the current scope, in the scope it binds in: ``into``
        when given, else the current one as ``global``/``nonlocal`` redirect it. Without
        ``record`` it binds no name (``from m import *``): in no scope's bindings."""
        lexical = self.scope
        if into is not None:
            scope = into
        else:
            lexical.bound.add(name)
            if lexical.globals or lexical.nonlocals:
                scope = self._binding_scope(lexical, name)
            else:
                scope = lexical  # the common case: no declaration can redirect it
        order = self.order
        self.order = order + 1
        assignment = Assignment(
            name,
            node,
            kind,
            scope,
            lexical,
            statement,
            order,
            self.top,
            self.conditional,
            self.type_checking,
        )
        if record:
            scope.bindings.append(assignment)
            if scope.kind == "class" and kind != "annotation":
                scope.earlier.add(name)  # reads later in the body see it
        return assignment

    def _binding_scope(self, lexical: Scope, name: str) -> Scope:
        if name in lexical.globals:
            return self.module
        if name in lexical.nonlocals:
            scope = lexical.parent
            while scope is not None and not (
                scope.kind in FUNCTION_LIKE and name in scope.bound and name not in scope.nonlocals
            ):
                scope = scope.parent
            return scope or self.module
        return lexical

    def _enter(self, kind: ScopeKind, node: ast.AST, name: str, line: int) -> Scope:
        scope = Scope(kind, node, name, line, self.scope)
        self.scope.children.append(scope)
        self.scope = scope
        return scope

    def _leave(self, scope: Scope) -> None:
        assert scope.parent is not None
        self.scope = scope.parent

    # -- walking ---------------------------------------------------------------------------

    def visit(self, node: ast.AST) -> None:
        self.dispatch.get(node.__class__, self.generic)(node)

    def generic(self, node: ast.AST) -> None:
        # The hot loop: dispatch inlined (one call per child, not two).
        cls = node.__class__
        fields = self.fields.get(cls)
        if fields is None:
            fields = self.fields[cls] = tuple(f for f in cls._fields if f not in _SKIP_FIELDS)
        dispatch = self.dispatch
        generic = self.generic
        for name in fields:
            value = getattr(node, name)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        dispatch.get(item.__class__, generic)(item)
            elif isinstance(value, ast.AST):
                dispatch.get(value.__class__, generic)(value)

    def _visit_all(self, nodes: list[ast.stmt] | list[ast.expr]) -> None:
        dispatch = self.dispatch
        generic = self.generic
        for node in nodes:
            dispatch.get(node.__class__, generic)(node)

    def _nothing(self, node: ast.AST) -> None:
        return

    def _name(self, node: ast.Name) -> None:
        ctx = node.ctx.__class__
        if ctx is _Load:  # _read inlined: a third of the walk's calls are plain reads
            name = node.id
            scope = self.scope
            order = self.order
            self.order = order + 1
            earlier = name in scope.earlier
            scope.reads.append(
                (name, name, node, order, self.top, self.time, self.annotation, earlier)
            )
            if self.compiler_sees:
                scope.used.add(name)
                if name == "super" and scope.kind in FUNCTION_LIKE:
                    scope.used.add("__class__")
        else:
            self._bind(node.id, node, "store" if ctx is _Store else "del")

    def _attribute(self, node: ast.Attribute) -> None:
        attrs = [node.attr] if node.ctx.__class__ is _Load else []
        value = node.value
        while value.__class__ is _Attribute:
            attrs.append(value.attr)
            value = value.value
        if value.__class__ is _Name:
            name = value.id
            attrs.append(name)
            attrs.reverse()
            self._read(name, ".".join(attrs), value)
        else:
            self.visit(value)

    def _call(self, node: ast.Call) -> None:
        dispatch = self.dispatch
        generic = self.generic
        func = node.func
        dispatch.get(func.__class__, generic)(func)
        for arg in node.args:
            dispatch.get(arg.__class__, generic)(arg)
        for keyword in node.keywords:
            value = keyword.value
            dispatch.get(value.__class__, generic)(value)

    def _value(self, node: ast.Expr | ast.Return | ast.Starred) -> None:
        value = node.value
        if value is not None:
            self.dispatch.get(value.__class__, self.generic)(value)

    def _elements(self, node: ast.Tuple | ast.List | ast.Set) -> None:
        dispatch = self.dispatch
        generic = self.generic
        for element in node.elts:
            dispatch.get(element.__class__, generic)(element)

    def _subscript(self, node: ast.Subscript) -> None:
        dispatch = self.dispatch
        generic = self.generic
        value, index = node.value, node.slice
        dispatch.get(value.__class__, generic)(value)
        dispatch.get(index.__class__, generic)(index)

    def _compare(self, node: ast.Compare) -> None:
        dispatch = self.dispatch
        generic = self.generic
        left = node.left
        dispatch.get(left.__class__, generic)(left)
        for right in node.comparators:
            dispatch.get(right.__class__, generic)(right)

    def _binop(self, node: ast.BinOp) -> None:
        rights: list[ast.expr] = []
        left: ast.expr = node
        while isinstance(left, ast.BinOp):  # long concatenations nest deeply on the left
            rights.append(left.right)
            left = left.left
        self.visit(left)
        for right in reversed(rights):
            self.visit(right)

    # -- annotations -----------------------------------------------------------------------

    def _annotation(self, node: ast.expr | None, *, evaluated: bool) -> None:
        if node is None:
            return
        saved = self.annotation, self.compiler_sees
        self.annotation = (
            EVALUATED if evaluated and not self.lazy and not self.type_checking else LAZY
        )
        self.compiler_sees = self.compiler and not self.lazy  # it ignores PEP 563 ones
        self.visit(node)
        self.annotation, self.compiler_sees = saved

    # -- scopes ----------------------------------------------------------------------------

    def _callable(
        self,
        kind: ScopeKind,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
        name: str,
        body: list[ast.stmt] | list[ast.expr],
    ) -> None:
        """A def's or lambda's parameters and body: defaults (and a def's annotations) in the
        enclosing scope, the parameters bound and the body walked in a scope of its own."""
        is_def = kind == "function"
        params = self._parameters(node.args, annotations=is_def)
        if is_def:
            self._annotation(node.returns, evaluated=True)  # type: ignore[union-attr]  # a def
        outer = self._type_params(node) if is_def else None
        if is_def and self.deferred is not None and self.time == LOAD:
            deferred = (node, params, self.scope, self.top, self.conditional, self.type_checking)
            self.deferred.append(deferred)  # type: ignore[arg-type]  # a def
        else:
            self._body(kind, node, name, body, params)
        self._leave_type_params(outer)

    def _body(
        self,
        kind: ScopeKind,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
        name: str,
        body: list[ast.stmt] | list[ast.expr],
        params: list[ast.arg],
    ) -> None:
        scope = self._enter(kind, node, name, node.lineno)
        saved = self.time, self.annotation, self.compiler_sees
        self.time, self.compiler_sees = CALL, self.compiler
        self.annotation = LAZY if self.type_checking else NOT_ANNOTATION  # a def that never runs
        for param in params:
            self._bind(param.arg, param, "param")
        self._visit_all(body)
        self.time, self.annotation, self.compiler_sees = saved
        self._leave(scope)

    def walk_deferred(self, skip: SkipBody) -> None:
        """Walk the deferred bodies ``skip`` keeps, each where its def is."""
        for node, params, parent, top, conditional, type_checking in self.deferred or ():
            if not skip(top, node):
                self.scope, self.top = parent, top
                self.conditional, self.type_checking = conditional, type_checking
                self._body("function", node, node.name, node.body, params)
        self.scope, self.deferred = self.module, None

    def _parameters(self, args: ast.arguments, *, annotations: bool) -> list[ast.arg]:
        """Visit defaults (and annotations) in the enclosing scope; return the parameters."""
        visit = self.visit
        for default in args.defaults:
            visit(default)
        for kw_default in args.kw_defaults:
            if kw_default is not None:
                visit(kw_default)
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if args.vararg:
            params.append(args.vararg)
        if args.kwarg:
            params.append(args.kwarg)
        if annotations:
            for param in params:
                self._annotation(param.annotation, evaluated=True)
        return params

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._visit_all(node.decorator_list)
        self._callable("function", node, node.name, node.body)
        self._bind(node.name, node, "def")

    def _lambda(self, node: ast.Lambda) -> None:
        self._callable("lambda", node, "lambda", [node.body])

    def _class(self, node: ast.ClassDef) -> None:
        self._visit_all(node.decorator_list)
        self._visit_all(node.bases)
        for keyword in node.keywords:
            self.visit(keyword.value)
        outer = self._type_params(node)
        scope = self._enter("class", node, node.name, node.lineno)
        self._visit_all(node.body)
        self._leave(scope)
        self._leave_type_params(outer)
        self._bind(node.name, node, "class")

    def _type_params(self, node: ast.AST) -> Scope | None:
        """PEP 695 (Python 3.12+): type parameters live in a scope of their own."""
        params = getattr(node, "type_params", None)
        if not params:
            return None
        scope = self._enter("type-params", node, node.name, node.lineno)  # type: ignore[attr-defined]  # a def or class
        for param in params:
            self._bind(param.name, param, "type-param")
            bound = getattr(param, "bound", None)
            if bound is not None:
                saved = self.time
                self.time = CALL  # evaluated lazily
                self.visit(bound)
                self.time = saved
        return scope

    def _leave_type_params(self, scope: Scope | None) -> None:
        if scope is not None:
            self._leave(scope)

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        scope = self._enter(
            "comprehension", node, _COMPREHENSION_NAMES[node.__class__], node.lineno
        )
        for position, generator in enumerate(generators):
            if position:
                self.visit(generator.iter)
            self.visit(generator.target)
            self._visit_all(generator.ifs)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self._leave(scope)

    def _namedexpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        name = node.target.id
        current = target = self.scope
        while target.kind == "comprehension" and target.parent is not None:
            target = target.parent  # a walrus in a comprehension binds in the enclosing scope
        if target is current:
            self._bind(name, node.target, "walrus")
            return
        declared = target.kind == "module" or name in target.globals
        (current.globals if declared else current.nonlocals).add(name)
        target.bound.add(name)
        self._bind(name, node.target, "walrus", into=self._binding_scope(target, name))

    def _global(self, node: ast.Global) -> None:
        scope = self.scope
        scope.globals.update(node.names)

    def _nonlocal(self, node: ast.Nonlocal) -> None:
        scope = self.scope
        scope.nonlocals.update(node.names)
