"""Compiler-exact scoping walk: which module-level names each statement binds and reads."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from nnrag.model import ImportBinding

__all__ = ["BindingWalker", "chain", "is_type_checking"]

_MODULE, _FUNCTION, _CLASS, _COMP = 0, 1, 2, 3

_Load = ast.Load
_Store = ast.Store
_Name = ast.Name
_Attribute = ast.Attribute

_TRY_STAR: type[ast.AST] | None = getattr(ast, "TryStar", None)  # Python >= 3.11
_TYPE_ALIAS: type[ast.AST] | None = getattr(ast, "TypeAlias", None)  # Python >= 3.12

_SKIP_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "type_params"})
_LOAD, _CALL, _ANNOTATION = 0, 1, 2
"""When a read happens: at load time, at call time, or never (an annotation Python does not
evaluate; it counts as a call-time read, and is also listed as annotation-only)."""
_Item = tuple[str, str, int]
"""A pending read: (root name, dotted chain, when: ``_LOAD``, ``_CALL`` or ``_ANNOTATION``)."""


def chain(node: ast.expr) -> str:
    """``a.b.c`` for a name/attribute chain, the value's chain for ``X[...]``, else ``""``."""
    if type(node) is ast.Subscript:
        node = node.value
    attrs: list[str] = []
    while type(node) is _Attribute:
        attrs.append(node.attr)
        node = node.value
    if type(node) is not _Name:
        return ""
    attrs.append(node.id)
    return ".".join(reversed(attrs))


def _strings(node: ast.expr | None, current: list[str] | None = None) -> list[str] | None:
    """The strings of a literal list/tuple (``+`` of such literals too), else ``None``."""
    if isinstance(node, ast.List | ast.Tuple):
        out: list[str] = []
        for item in node.elts:
            if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                return None
            out.append(item.value)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _strings(node.left, current), _strings(node.right, current)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Name) and node.id == "__all__" and current is not None:
        return list(current)  # __all__ = __all__ + [...]
    return None


def is_type_checking(test: ast.expr) -> bool:
    """Whether an ``if`` test is ``TYPE_CHECKING``, bare or as any module's attribute."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Scope:
    """One scope while walking: names bound so far, declarations, reads left to resolve."""

    __slots__ = ("bound", "globals", "imported", "kind", "nonlocals", "parent", "pending")

    def __init__(self, kind: int, parent: _Scope | None) -> None:
        self.kind = kind
        self.parent = parent
        self.bound: set[str] = set()
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.pending: list[_Item] = []
        self.imported: dict[str, int] = {}
        """Names bound here by an import (not at module level) -> the import's line."""


class BindingWalker:
    """Walks a module once, resolving every name with the compiler's scoping rules.

    Function and comprehension scopes collect their reads and resolve them when
    they close (a name bound anywhere in a function is local to all of it);
    unresolved names move to the enclosing scope, skipping class scopes. Class
    bodies resolve in order: a name read before the body binds it is global.

    Per top-level unit: :meth:`reset`, :meth:`visit` its statements, then read
    ``binds``, ``load`` and ``calls`` (dotted chains read at load and at call
    time), ``imports``, ``local_imports`` and ``classes`` (module-level ``ClassDef``
    nodes). ``future``, ``star_imports`` and :meth:`all_names` cover the module.
    """

    def __init__(self, *, module: str, is_package: bool, tree: ast.Module) -> None:
        self.module = module
        self.is_package = is_package
        self.future: list[str] = []
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
                self.future.extend(a.name for a in stmt.names)
        self.annotations = "annotations" not in self.future
        self.star_imports: list[str] = []
        self._all: list[str] | None = None
        self._all_dynamic = False
        self.scope = _Scope(_MODULE, None)
        self.call = _LOAD
        self.cond = False
        self.tc = False
        self.reset()
        self.dispatch: dict[type[ast.AST], Callable[[Any], None]] = {
            ast.Name: self._name,
            ast.Attribute: self._attribute,
            ast.Constant: self._nothing,
            ast.FunctionDef: self._function,
            ast.AsyncFunctionDef: self._function,
            ast.Lambda: self._lambda,
            ast.ClassDef: self._class,
            ast.ListComp: self._comprehension,
            ast.SetComp: self._comprehension,
            ast.GeneratorExp: self._comprehension,
            ast.DictComp: self._comprehension,
            ast.NamedExpr: self._namedexpr,
            ast.Global: self._global,
            ast.Nonlocal: self._nonlocal,
            ast.Import: self._import,
            ast.ImportFrom: self._importfrom,
            ast.Assign: self._assign,
            ast.AnnAssign: self._annassign,
            ast.AugAssign: self._augassign,
            ast.For: self._for,
            ast.AsyncFor: self._for,
            ast.If: self._if,
            ast.While: self._conditional,
            ast.With: self._conditional,
            ast.AsyncWith: self._conditional,
            ast.Try: self._conditional,
            ast.Match: self._conditional,
            ast.ExceptHandler: self._handler,
            ast.MatchAs: self._match_capture,
            ast.MatchStar: self._match_capture,
            ast.MatchMapping: self._match_mapping,
            ast.Expr: self._expr,
            ast.BinOp: self._binop,
        }
        if _TRY_STAR is not None:
            self.dispatch[_TRY_STAR] = self._conditional
        if _TYPE_ALIAS is not None:
            self.dispatch[_TYPE_ALIAS] = self._type_alias
        self.fields: dict[type[ast.AST], tuple[str, ...]] = {}

    # ------------------------------------------------------------------ one unit

    def reset(self) -> None:
        """Start a new top-level unit: forget what the previous one bound and read."""
        self.binds: set[str] = set()
        self.load: set[str] = set()
        self.calls: set[str] = set()
        self._evaluated_calls: set[str] = set()
        self.annotation_reads: set[str] = set()
        """Chains read in annotations that never run (a subset of :attr:`calls` once read
        elsewhere is subtracted: see :meth:`annotation_only`)."""
        self.imports: list[ImportBinding] = []
        self.local_imports: list[ImportBinding] = []
        self.local_reads: set[tuple[str, int]] = set()
        self.classes: list[ast.ClassDef] = []

    def annotation_only(self) -> tuple[str, ...]:
        """Chains this unit reads only in annotations Python never evaluates."""
        return tuple(sorted(self.annotation_reads - self.load - self._evaluated_calls))

    def all_names(self) -> tuple[str, ...] | None:
        """The literal ``__all__`` so far; ``None`` when absent or built dynamically."""
        if self._all is None or self._all_dynamic:
            return None
        return tuple(dict.fromkeys(self._all))

    # ------------------------------------------------------------------ names

    def _emit(self, chain: str, call: int) -> None:
        if call == _LOAD:
            self.load.add(chain)
            return
        self.calls.add(chain)
        (self.annotation_reads if call == _ANNOTATION else self._evaluated_calls).add(chain)

    def _escalate(self, scope: _Scope | None, item: _Item) -> None:
        """Hand an unresolved read to the enclosing scope (class scopes are not visible)."""
        while scope is not None and scope.kind == _CLASS:
            scope = scope.parent
        if scope is None or scope.kind == _MODULE:
            self._emit(item[1], item[2])
        else:
            scope.pending.append(item)

    def _read(self, name: str, chain: str) -> None:
        scope = self.scope
        kind = scope.kind
        if kind == _MODULE:
            self._emit(chain, self.call)
        elif kind == _CLASS:
            if name in scope.globals:
                self._emit(chain, self.call)
            elif name not in scope.bound:
                self._escalate(scope.parent, (name, chain, self.call))
            elif name in scope.imported:
                self.local_reads.add((chain, scope.imported[name]))
        else:
            scope.pending.append((name, chain, self.call))

    def _store(self, name: str) -> None:
        scope = self.scope
        if scope.kind == _MODULE or name in scope.globals:
            self.binds.add(name)
        elif name not in scope.nonlocals:
            scope.bound.add(name)

    def _close(self, scope: _Scope) -> None:
        parent = scope.parent
        for item in scope.pending:
            name = item[0]
            if name in scope.globals:
                self._emit(item[1], item[2])
            elif name in scope.imported and name in scope.bound:
                self.local_reads.add((item[1], scope.imported[name]))
            elif not (
                name in scope.bound
                or name in scope.nonlocals
                or (name == "__class__" and parent is not None and parent.kind == _CLASS)
            ):
                self._escalate(parent, item)

    # ------------------------------------------------------------------ walking

    def visit(self, node: ast.AST) -> None:
        handler = self.dispatch.get(node.__class__)
        if handler is None:
            self.generic(node)
        else:
            handler(node)

    def generic(self, node: ast.AST) -> None:
        cls = node.__class__
        fields = self.fields.get(cls)
        if fields is None:
            fields = self.fields[cls] = tuple(f for f in cls._fields if f not in _SKIP_FIELDS)
        visit = self.visit
        for field in fields:
            value = getattr(node, field)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        visit(item)
            elif isinstance(value, ast.AST):
                visit(value)

    def _visit_all(self, nodes: list[ast.stmt] | list[ast.expr]) -> None:
        visit = self.visit
        for node in nodes:
            visit(node)

    def _nothing(self, node: ast.AST) -> None:
        return

    def _name(self, node: ast.Name) -> None:
        ctx = node.ctx.__class__
        if ctx is _Load or (ctx is not _Store and self.scope.kind == _MODULE):
            self._read(node.id, node.id)
        else:
            self._store(node.id)

    def _attribute(self, node: ast.Attribute) -> None:
        attrs = [node.attr] if node.ctx.__class__ is _Load else []
        value = node.value
        while value.__class__ is _Attribute:
            attrs.append(value.attr)
            value = value.value
        if value.__class__ is _Name:
            name = value.id
            if attrs:
                attrs.append(name)
                attrs.reverse()
                self._read(name, ".".join(attrs))
            else:
                self._read(name, name)
        else:
            self.visit(value)

    def _binop(self, node: ast.BinOp) -> None:
        rights: list[ast.expr] = []
        left: ast.expr = node
        while isinstance(left, ast.BinOp):  # long concatenations nest deeply on the left
            rights.append(left.right)
            left = left.left
        self.visit(left)
        for right in reversed(rights):
            self.visit(right)

    def _expr(self, node: ast.Expr) -> None:
        value = node.value
        if (
            self.scope.kind == _MODULE
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and chain(value.func.value) == "__all__"
        ):
            method = value.func.attr
            if method == "extend" and len(value.args) == 1:
                self._add_all(_strings(value.args[0]))
            elif method == "append" and len(value.args) == 1:
                arg = value.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    self._add_all([arg.value])
                else:
                    self._add_all(None)
        self.visit(value)

    def _set_all(self, value: ast.expr | None) -> None:
        names = _strings(value, self._all)
        if names is None:
            self._all_dynamic = True
        else:
            self._all = list(names)

    def _add_all(self, names: list[str] | None) -> None:
        if names is None:
            self._all_dynamic = True
        elif self._all is None:
            self._all = names
        else:
            self._all.extend(names)

    # ------------------------------------------------------------------ scopes

    def _arguments(self, args: ast.arguments) -> list[str]:
        """Visit defaults and annotations in the enclosing scope; return parameter names."""
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
        for param in params:
            if param.annotation is not None:
                self._annotation(param.annotation, evaluated=True)
        return [p.arg for p in params]

    def _annotation(self, node: ast.expr, *, evaluated: bool) -> None:
        """Annotations that never run (PEP 563, local variables) are call-time reads.

        They are kept as reads so the emitted file stays statically closed (linters,
        ``typing.get_type_hints`` and TorchScript look the names up).
        """
        if evaluated and self.annotations:
            self.visit(node)
        else:
            saved = self.call
            self.call = _ANNOTATION
            self.visit(node)
            self.call = saved

    def _enter(self, kind: int, call: int) -> tuple[_Scope, int]:
        scope = _Scope(kind, self.scope)
        saved = self.call
        self.scope = scope
        self.call = call
        return scope, saved

    def _leave(self, scope: _Scope, saved_call: int) -> None:
        assert scope.parent is not None
        self.scope = scope.parent
        self.call = saved_call
        if scope.kind != _CLASS:
            self._close(scope)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._visit_all(node.decorator_list)
        params = self._arguments(node.args)
        if node.returns is not None:
            self._annotation(node.returns, evaluated=True)
        scope, saved = self._enter(_FUNCTION, _CALL)
        scope.bound.update(params)
        self._visit_all(node.body)
        self._leave(scope, saved)
        self._store(node.name)

    def _lambda(self, node: ast.Lambda) -> None:
        params = self._arguments(node.args)
        scope, saved = self._enter(_FUNCTION, _CALL)
        scope.bound.update(params)
        self.visit(node.body)
        self._leave(scope, saved)

    def _class(self, node: ast.ClassDef) -> None:
        self._visit_all(node.decorator_list)
        self._visit_all(node.bases)
        for keyword in node.keywords:
            self.visit(keyword.value)
        if self.scope.kind == _MODULE:
            self.classes.append(node)
        scope, saved = self._enter(_CLASS, self.call)
        self._visit_all(node.body)
        self._leave(scope, saved)
        self._store(node.name)

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        scope, saved = self._enter(_COMP, self.call)
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
        self._leave(scope, saved)

    def _namedexpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        scope = current = self.scope
        while scope.kind == _COMP and scope.parent is not None:
            scope = scope.parent  # a walrus in a comprehension binds in the enclosing scope
        self.scope = scope
        self._store(node.target.id)
        self.scope = current

    def _global(self, node: ast.Global) -> None:
        if self.scope.kind != _MODULE:
            self.scope.globals.update(node.names)

    def _nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.nonlocals.update(node.names)

    # ------------------------------------------------------------------ statements

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.partition(".")[0]
            self._binding(local, alias.name, None, 0, node.lineno)
            self._store(local)
            self._imported(local, node.lineno)

    def _importfrom(self, node: ast.ImportFrom) -> None:
        module = self._absolute(node.module, node.level)
        for alias in node.names:
            if alias.name == "*":
                self._binding("*", module, "*", node.level, node.lineno)
                if self.scope.kind == _MODULE:
                    self.star_imports.append(module)
                continue
            local = alias.asname or alias.name
            self._binding(local, module, alias.name, node.level, node.lineno)
            self._store(local)
            self._imported(local, node.lineno)

    def _imported(self, name: str, line: int) -> None:
        """Remember a name a local import binds, so chains through it are reported."""
        scope = self.scope
        if scope.kind != _MODULE and name not in scope.globals and name not in scope.nonlocals:
            scope.imported[name] = line

    def _binding(self, name: str, module: str, attr: str | None, level: int, line: int) -> None:
        target = self.imports if self.scope.kind == _MODULE else self.local_imports
        target.append(
            ImportBinding(
                name=name,
                module=module,
                attr=attr,
                level=level,
                conditional=self.cond,
                type_checking=self.tc,
                line=line,
            )
        )

    def _absolute(self, name: str | None, level: int) -> str:
        """Resolve ``from ..x import`` against this module; keep surplus dots when too high."""
        if level == 0:
            return name or ""
        parts = self.module.split(".") if self.module else []
        if not self.is_package:
            parts = parts[:-1]
        up = level - 1
        if up >= len(parts):
            return "." * (up - len(parts) + 1) + (name or "")
        base = parts[: len(parts) - up]
        if name:
            base.append(name)
        return ".".join(base)

    def _assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        if self.scope.kind == _MODULE:
            for target in node.targets:
                if target.__class__ is _Name and target.id == "__all__":
                    self._set_all(node.value)
        self._visit_all(node.targets)

    def _annassign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        kind = self.scope.kind
        self._annotation(node.annotation, evaluated=kind in (_MODULE, _CLASS))
        target = node.target
        if isinstance(target, ast.Name):
            if node.value is not None or kind not in (_MODULE, _CLASS):
                self._store(target.id)
                if kind == _MODULE and target.id == "__all__":
                    self._set_all(node.value)
        else:
            self.visit(target)

    def _augassign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        target = node.target
        if isinstance(target, ast.Name):
            if self.scope.kind == _MODULE and target.id == "__all__":
                self._add_all(_strings(node.value))
            self._read(target.id, target.id)
            self._store(target.id)
        else:
            self.visit(target)

    def _type_alias(self, node: ast.AST) -> None:
        saved = self.call
        self.call = max(self.call, _CALL)  # the value is evaluated lazily
        self.visit(node.value)  # type: ignore[attr-defined]  # ast.TypeAlias on 3.12+
        self.call = saved
        self.visit(node.name)  # type: ignore[attr-defined]  # ast.TypeAlias on 3.12+

    def _for(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        saved = self.cond
        self.cond = True
        self.visit(node.target)
        self._visit_all(node.body)
        self._visit_all(node.orelse)
        self.cond = saved

    def _if(self, node: ast.If) -> None:
        self.visit(node.test)
        saved_cond, saved_tc = self.cond, self.tc
        test = node.test
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        checking = is_type_checking(test.operand if isinstance(test, ast.UnaryOp) else test)
        self.cond = True
        self.tc = saved_tc or (checking and not negated)
        self._visit_all(node.body)
        self.tc = saved_tc or (checking and negated)
        self._visit_all(node.orelse)
        self.cond, self.tc = saved_cond, saved_tc

    def _conditional(self, node: ast.AST) -> None:
        saved = self.cond
        self.cond = True
        self.generic(node)
        self.cond = saved

    def _handler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._store(node.name)
        self._visit_all(node.body)

    def _match_capture(self, node: ast.MatchAs | ast.MatchStar) -> None:
        pattern = getattr(node, "pattern", None)
        if pattern is not None:
            self.visit(pattern)
        if node.name:
            self._store(node.name)

    def _match_mapping(self, node: ast.MatchMapping) -> None:
        self._visit_all(node.keys)
        for pattern in node.patterns:
            self.visit(pattern)
        if node.rest:
            self._store(node.rest)
