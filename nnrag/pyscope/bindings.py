"""Index-time view of the scope model: module-level names each top-level unit binds and reads."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from nnrag.model import ImportBinding
from nnrag.pyscope.scopes import (
    CALL,
    LAZY,
    Assignment,
    Scope,
    ScopeTree,
    build_scopes,
    is_type_checking,
)
from nnrag.pyscope.tree import dotted

__all__ = ["ModuleBindings", "UnitBindings", "is_type_checking"]

_BODIES = ("body", "handlers", "orelse", "finalbody", "cases")
"""Statement lists of compound statements, in the order Python runs them."""


@dataclass(slots=True)
class UnitBindings:
    """What one top-level unit (one or more statements) binds and reads at module level."""

    binds: set[str] = field(default_factory=set)
    assigns: set[str] = field(default_factory=set)
    """The names of ``binds`` bound otherwise than by a module-level import."""
    rebinds: set[str] = field(default_factory=set)
    """The names of ``binds`` bound only when a function runs (``global x`` then ``x = ...``
    in a def): the unit does not give them their value while the module runs."""
    load: set[str] = field(default_factory=set)
    """Dotted chains of module-level names read while the module runs."""
    calls: set[str] = field(default_factory=set)
    """Dotted chains read when a function runs, or in annotations Python never evaluates."""
    evaluated_calls: set[str] = field(default_factory=set)
    annotation_reads: set[str] = field(default_factory=set)
    imports: list[ImportBinding] = field(default_factory=list)
    local_imports: list[ImportBinding] = field(default_factory=list)
    """Imports written inside a function or class body."""
    local_reads: set[tuple[str, int]] = field(default_factory=set)
    """Chains read through a name a local import binds, with that import's line."""
    classes: list[ast.ClassDef] = field(default_factory=list)
    """Module-level ``class`` statements (at any depth of ``if``/``try``)."""
    computed: bool = False
    """The unit binds module names by keys it computes (``globals()[name] = ...``)."""

    def annotation_only(self) -> tuple[str, ...]:
        """Chains this unit reads only in annotations Python never evaluates."""
        return tuple(sorted(self.annotation_reads - self.load - self.evaluated_calls))

    def merge(self, other: UnitBindings) -> None:
        now = (self.binds - self.rebinds) | (other.binds - other.rebinds)
        self.rebinds = (self.rebinds | other.rebinds) - now
        self.binds |= other.binds
        self.assigns |= other.assigns
        self.load |= other.load
        self.calls |= other.calls
        self.evaluated_calls |= other.evaluated_calls
        self.annotation_reads |= other.annotation_reads
        self.imports += other.imports
        self.local_imports += other.local_imports
        self.local_reads |= other.local_reads
        self.classes += other.classes
        self.computed = self.computed or other.computed


class ModuleBindings:
    """The module-level facts of one parsed module, per top-level statement, from its scopes.

    ``future``, ``star_imports`` and :meth:`all_names` cover the module; :meth:`unit` the
    statements of one unit.
    """

    def __init__(self, *, module: str, is_package: bool, tree: ast.Module) -> None:
        self.module = module
        self.is_package = is_package
        scopes = build_scopes(tree, compiler=False)
        self.future = list(scopes.future)
        self.star_imports: list[str] = []
        self._all: list[str] | None = None
        self._all_dynamic = False
        self._statements = [UnitBindings() for _ in tree.body]
        self._collect_reads(scopes)
        self._collect_bindings(scopes)
        scopes.release()  # freed now, not by a later garbage collection
        self._collect_all(tree.body)
        for facts, statement in zip(self._statements, tree.body, strict=True):
            # only a statement that reads one of those builtins can be one (a cheap filter:
            # most statements never do, and walking every tree again is not free)
            roots = {chain.partition(".")[0] for chain in facts.load | facts.calls}
            if roots & _NAMESPACE_WRITERS:
                facts.computed = binds_computed_names(statement)

    def unit(self, first: int, last: int) -> UnitBindings:
        """What top-level statements ``first`` to ``last`` (inclusive) bind and read."""
        if first == last:
            return self._statements[first]
        merged = UnitBindings()
        for index in range(first, last + 1):
            merged.merge(self._statements[index])
        return merged

    def all_names(self) -> tuple[str, ...] | None:
        """The literal ``__all__``; ``None`` when absent or built dynamically."""
        if self._all is None or self._all_dynamic:
            return None
        return tuple(dict.fromkeys(self._all))

    # -- reads -----------------------------------------------------------------------------

    def _collect_reads(self, scopes: ScopeTree) -> None:
        module = scopes.module
        statements = self._statements
        imported = {(id(i.scope), i.name) for i in scopes.imports if i.scope is not module}
        for scope in module.walk():
            reads = scope.reads
            if not reads:
                continue
            if scope.function_like:  # there the target depends on the name only
                targets = dict.fromkeys(scope.bound - scope.nonlocals - scope.globals, scope)
                targets.pop("__class__", None)  # a method's implicit cell: let the model say
            for read in reads:
                name, chain, _, order, top, time, annotation, _ = read
                if scope is module:
                    target = module
                elif scope.kind == "class":
                    target = scope.target(read)
                else:
                    found = targets.get(name)
                    target = targets[name] = scope.resolve(name) if found is None else found
                if target is module:
                    facts = statements[top]
                    if annotation == LAZY:
                        facts.calls.add(chain)
                        facts.annotation_reads.add(chain)
                    elif time == CALL:
                        facts.calls.add(chain)
                        facts.evaluated_calls.add(chain)
                    else:
                        facts.load.add(chain)
                elif imported and (id(target), name) in imported:
                    line = _import_line(target, name, order)
                    if line:
                        statements[top].local_reads.add((chain, line))

    # -- bindings --------------------------------------------------------------------------

    def _collect_bindings(self, scopes: ScopeTree) -> None:
        module = scopes.module
        statements = self._statements
        later: dict[int, set[str]] = {}  # statement -> names bound in its functions
        now: dict[int, set[str]] = {}  # statement -> names bound as the module runs
        for assignment in module.bindings:
            kind = assignment.kind
            facts = statements[assignment.top]
            if kind == "del" and assignment.lexical is module:
                facts.load.add(assignment.name)  # ``del x`` at module level reads ``x``
            elif kind != "annotation":
                facts.binds.add(assignment.name)
                if kind != "import":
                    facts.assigns.add(assignment.name)
                when = later if assignment.lexical.in_function() else now
                when.setdefault(assignment.top, set()).add(assignment.name)
            if kind == "class" and assignment.lexical is module:
                facts.classes.append(assignment.node)  # type: ignore[arg-type]  # kind "class": the ClassDef
        for top, names in later.items():
            statements[top].rebinds |= names - now.get(top, set())
        for facts in statements:
            facts.classes.sort(key=lambda node: (node.lineno, node.col_offset))
        for assignment in scopes.imports:
            self._import(assignment)

    def _import(self, assignment: Assignment) -> None:
        statement = assignment.statement
        alias = assignment.node
        assert isinstance(alias, ast.alias)
        at_module = assignment.lexical.kind == "module"
        if isinstance(statement, ast.ImportFrom):
            module = self._absolute(statement.module, statement.level)
            attr, level = alias.name, statement.level
            if alias.name == "*" and at_module:
                self.star_imports.append(module)
        else:
            module, attr, level = alias.name, None, 0
        facts = self._statements[assignment.top]
        (facts.imports if at_module else facts.local_imports).append(
            ImportBinding(
                name=assignment.name,
                module=module,
                attr=attr,
                level=level,
                conditional=assignment.conditional,
                type_checking=assignment.type_checking,
                line=statement.lineno if statement is not None else 0,
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

    # -- __all__ ---------------------------------------------------------------------------

    def _collect_all(self, body: list[ast.stmt]) -> None:
        """``__all__`` from the module-level statements that build it, in order."""
        for statement in body:
            kind = type(statement)
            if kind is ast.Assign:
                assign: ast.Assign = statement  # type: ignore[assignment]  # kind is ast.Assign
                if any(type(t) is ast.Name and t.id == "__all__" for t in assign.targets):
                    self._set_all(assign.value)
            elif kind is ast.AnnAssign:
                annotated: ast.AnnAssign = statement  # type: ignore[assignment]  # kind is ast.AnnAssign
                target = annotated.target
                if isinstance(target, ast.Name) and target.id == "__all__" and annotated.value:
                    self._set_all(annotated.value)
            elif kind is ast.AugAssign:
                augmented: ast.AugAssign = statement  # type: ignore[assignment]  # kind is ast.AugAssign
                target = augmented.target
                if isinstance(target, ast.Name) and target.id == "__all__":
                    self._add_all(_strings(augmented.value))
            elif kind is ast.Expr:
                self._all_call(statement.value)  # type: ignore[attr-defined]  # kind is ast.Expr
            elif kind not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                for name in _BODIES:
                    nested = getattr(statement, name, None)
                    if not nested:
                        continue
                    if name == "handlers":
                        for handler in nested:
                            self._collect_all(handler.body)
                    elif name == "cases":
                        for case in nested:
                            self._collect_all(case.body)
                    else:
                        self._collect_all(nested)

    def _all_call(self, value: ast.expr) -> None:
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == "__all__"
        ):
            return
        method = value.func.attr
        if method == "extend" and len(value.args) == 1:
            self._add_all(_strings(value.args[0]))
        elif method == "append" and len(value.args) == 1:
            arg = value.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self._add_all([arg.value])
            else:
                self._add_all(None)

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


_NAMESPACES = frozenset({"globals", "locals", "vars"})
"""Calls that return the module's namespace at module level."""
_NAMESPACE_WRITERS = _NAMESPACES | {"setattr"}


def binds_computed_names(statement: ast.stmt) -> bool:
    """Whether a top-level statement, as its module loads, writes module names by keys it
    computes: an item of ``globals()``, ``locals()`` or ``vars()`` (the module's namespace
    there) assigned or updated, or ``setattr(sys.modules[__name__], ...)``. A loop that wraps
    each class of another module (``for name, cls in ...: globals()[name] = wrap(cls)``)
    binds names no list of its module holds. A write in a function body binds only when the
    function is called, which the module may never do (pykan's ``globals()['self.bias_0'] =``
    in a method): it is not counted."""
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if _writes_namespace(node):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _writes_namespace(node: ast.AST) -> bool:
    if isinstance(node, ast.Assign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Subscript) and _namespace_call(t.value) for t in targets)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in {"update", "setdefault"}:
        return _namespace_call(func.value)
    if isinstance(func, ast.Name) and func.id == "setattr" and node.args:
        owner = node.args[0]
        return (
            isinstance(owner, ast.Subscript)
            and dotted(owner.value) == "sys.modules"
            and isinstance(owner.slice, ast.Name)
            and owner.slice.id == "__name__"
        )
    return False


def _namespace_call(node: ast.expr) -> bool:
    """``globals()``, ``locals()`` or ``vars()`` (outside functions: the module's namespace)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _NAMESPACES
        and not node.args
    )


def _import_line(scope: Scope, name: str, order: int) -> int:
    """Line of the local import binding ``name`` in ``scope`` that a read (at ``order``)
    sees (0: none).

    In a function, the last import of the name anywhere in it; in a class body, the last
    one before the read.
    """
    line = 0
    for assignment in scope.assignments[name]:
        if assignment.kind != "import" or assignment.lexical is not scope:
            continue
        if scope.kind == "class" and assignment.order > order:
            break
        assert assignment.statement is not None
        line = assignment.statement.lineno
    return line


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
