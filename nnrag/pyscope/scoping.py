"""Unresolved names of one block file (NNR101-NNR105), from the one scope model."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace

from nnrag.diagnostics import diagnostic
from nnrag.model import Diagnostic
from nnrag.pyscope.scopes import (
    CALL,
    GLOBAL_EXPLICIT,
    GLOBAL_IMPLICIT,
    LAZY,
    Assignment,
    BodyFilter,
    Read,
    Scope,
    ScopeTree,
    SkipBody,
    build_scopes,
    is_type_checking,
)

__all__ = ["FunctionNode", "FunctionReads", "unresolved_names"]

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
FunctionReads = Callable[[int, FunctionNode, Container[str]], bool]
"""``(top-level statement index, def, known names) ->`` whether the def's body (nested scopes
included) may read from the module a name not among the known ones (True when unsure)."""

_BUILTINS = frozenset(dir(builtins))
_MODULE_DUNDERS = frozenset(
    {
        "__name__",
        "__doc__",
        "__file__",
        "__spec__",
        "__loader__",
        "__package__",
        "__builtins__",
        "__cached__",
        "__annotations__",
        "__dict__",
    }
)
_CLASS_DUNDERS = frozenset({"__module__", "__qualname__"})
_GLOBAL = frozenset({GLOBAL_EXPLICIT, GLOBAL_IMPLICIT})
_BODIES = ("body", "handlers", "orelse", "finalbody", "cases")
"""Statement lists of compound statements."""

_Span = tuple[tuple[int, int], tuple[int, int]]


def unresolved_names(
    tree: ast.Module, *, deltas: Sequence[int] | None = None, reads: FunctionReads | None = None
) -> list[Diagnostic]:
    """NNR101-NNR105 issues of a parsed file.

    A name is resolved as the compiler resolves it (the scope model's classification, which
    the test suite compares with :mod:`symtable`): a global read at import time must be bound
    by an earlier statement (or the statement itself), one at call time by the module once it
    has run. ``deltas``: how many lines each top-level statement's tree is behind the file
    (trees parsed piece by piece).

    ``reads`` (the check passes the compiler's names, :func:`nnrag.check.pieces.function_reads`)
    saves the walk of function bodies that cannot hold an issue: a body reads at call time,
    when every name the module binds is bound, so one whose every possible module read is a
    name the module binds (outside function bodies), a builtin or a module dunder has none.
    The walk leaves the bodies of load-time defs for last; the module's names bound by the
    rest decide which it leaves out. The issues are the same as without ``reads``.
    """
    spans = [_type_checking_bodies([statement]) for statement in tree.body]
    bodies = None if reads is None else _quiet_bodies(tree, deltas, reads, spans)
    scopes = build_scopes(tree, bodies=bodies)
    try:
        checker = _NameChecker(tree, scopes, deltas, partial=bodies is not None, spans=spans)
        return checker.run()
    finally:
        scopes.release()  # freed now, not by a later garbage collection


def _quiet_bodies(
    tree: ast.Module, deltas: Sequence[int] | None, reads: FunctionReads, spans: list[list[_Span]]
) -> BodyFilter:
    """Which function bodies can hold no unresolved name (see :func:`unresolved_names`)."""

    def bodies(outline: ScopeTree) -> SkipBody:
        namespace = _NameChecker(tree, outline, deltas, spans=spans)
        namespace.module_namespace()
        known = namespace.final | _BUILTINS | _MODULE_DUNDERS
        return lambda top, node: not reads(top, node, known)

    return bodies


def _spans(statements: list[ast.stmt]) -> list[_Span]:
    """Source spans of a statement list (first statement's start to last one's end)."""
    if not statements:
        return []
    first, last = statements[0], statements[-1]
    end = (last.end_lineno or last.lineno, last.end_col_offset or 0)
    return [((first.lineno, first.col_offset), end)]


def _type_checking_bodies(statements: list[ast.stmt]) -> list[_Span]:
    """Spans of the ``if TYPE_CHECKING:`` bodies at module level (in compound statements too)."""
    found: list[_Span] = []
    for statement in statements:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(statement, ast.If) and is_type_checking(statement.test):
            found += _spans(statement.body)
            found += _type_checking_bodies(statement.orelse)
            continue
        for name in _BODIES:
            nested = getattr(statement, name, None)
            if not nested:
                continue
            for item in nested:
                if isinstance(item, ast.ExceptHandler | ast.match_case):
                    found += _type_checking_bodies(item.body)
                elif isinstance(item, ast.stmt):
                    found += _type_checking_bodies([item])
    return found


def _within(node: ast.AST, spans: list[_Span]) -> bool:
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]  # a positioned node
    return any(low <= start < high for low, high in spans)


def _module_level(scope: Scope) -> bool:
    """Whether code in ``scope`` runs in the module's namespace (comprehensions aside)."""
    while scope.kind == "comprehension" and scope.parent is not None:
        scope = scope.parent
    return scope.kind == "module"


@dataclass
class _NameChecker:
    """Checks every read of the scope tree against the module namespace of its time."""

    tree: ast.Module
    scopes: ScopeTree
    deltas: Sequence[int] | None = None
    findings: list[Diagnostic] = field(default_factory=list)
    runtime: set[str] = field(default_factory=set)
    """Module-level names bound by the statements executed so far (load time)."""
    final: set[str] = field(default_factory=set)
    """Module-level names bound once the module has run (what function bodies see)."""
    type_checking_only: set[str] = field(default_factory=set)
    ever_bound: set[str] = field(default_factory=set)
    """Module-level names bound by any top-level statement (some may be deleted later)."""
    class_locals: set[str] | None = None
    """Names bound in some class body (for a hint when a method reads one as a global);
    computed on the first NNR101."""
    star_modules: list[tuple[str, int, int]] = field(default_factory=list)
    star_dependents: list[str] = field(default_factory=list)
    partial: bool = False
    """Some function bodies were left out of :attr:`scopes` (see :func:`_quiet_bodies`)."""
    _bindings: list[tuple[set[str], set[str]]] = field(default_factory=list)
    """What each top-level statement binds and deletes."""
    spans: list[list[_Span]] = field(default_factory=list)
    """Per top-level statement, its ``if TYPE_CHECKING:`` bodies."""

    def run(self) -> list[Diagnostic]:
        self.module_namespace()
        skipped = self.spans
        reads: list[list[Read]] = [[] for _ in self.tree.body]
        for scope in self.scopes.scopes():
            self._candidates(scope, reads)
        for index, candidates in enumerate(reads):
            bound, deleted = self._bindings[index]
            found = len(self.findings)
            candidates.sort(key=lambda read: (read[2].lineno, read[2].col_offset))
            spans = skipped[index]
            for read in candidates:
                if not (spans and _within(read[2], spans)):
                    self._read(read, extra=bound)
            if self.deltas and self.deltas[index]:  # to the file's lines
                delta = self.deltas[index]
                self.findings[found:] = [
                    replace(finding, line=finding.line + delta) for finding in self.findings[found:]
                ]
            self.runtime |= bound
            self.runtime -= deleted
        self._check_all()
        if self.star_modules and self.star_dependents:
            names = ", ".join(sorted(set(self.star_dependents)))
            for module, line, col in self.star_modules:
                self.findings.append(
                    diagnostic("NNR103", line=line, col=col, module=module, names=names)
                )
        return self.findings

    # -- namespace -------------------------------------------------------------------------

    def module_namespace(self) -> None:
        """What each top-level statement binds in the module (and deletes), in order."""
        if not self.spans:
            self.spans = [_type_checking_bodies([s]) for s in self.tree.body]
        skipped = self.spans
        module = self.scopes.module
        per_statement: list[list[Assignment]] = [[] for _ in self.tree.body]
        for assignment in module.bindings:
            if _module_level(assignment.lexical):
                if assignment.kind != "del":
                    per_statement[assignment.top].append(assignment)
            else:  # ``global x`` then ``x = ...`` in a function or class
                self.final.add(assignment.name)
        checking: set[str] = set()
        for index, statement in enumerate(self.tree.body):
            bound: set[str] = set()
            deleted: set[str] = set()
            if isinstance(statement, ast.Delete):
                deleted = {t.id for t in statement.targets if isinstance(t, ast.Name)}
            else:
                conditional = isinstance(statement, ast.If) and is_type_checking(statement.test)
                for assignment in per_statement[index]:
                    if conditional and _within(assignment.node, skipped[index]):
                        checking.add(assignment.name)
                    else:
                        bound.add(assignment.name)
            self._bindings.append((bound, deleted))
            self.final |= bound
            self.final -= deleted
            self.ever_bound |= bound
            if isinstance(statement, ast.ImportFrom) and any(
                a.name == "*" for a in statement.names
            ):
                written = "." * statement.level + (statement.module or "")
                line = statement.lineno + (self.deltas[index] if self.deltas else 0)
                self.star_modules.append((written, line, statement.col_offset + 1))
        self.type_checking_only = checking - self.final

    def _class_names(self) -> set[str]:
        """Names assigned in any class body, at any depth."""
        scopes = build_scopes(self.tree, compiler=False) if self.partial else self.scopes
        try:
            return {
                assignment.name
                for scope in scopes.scopes()
                if scope.kind == "class"
                for assignment in scope.bindings
                if assignment.kind != "import"
            }
        finally:
            if scopes is not self.scopes:
                scopes.release()

    # -- reads -------------------------------------------------------------------------------

    def _candidates(self, scope: Scope, reads: list[list[Read]]) -> None:
        """The reads of ``scope`` that may be unresolved, by top-level statement.

        Left out: annotations Python never evaluates, names the compiler finds in a function
        scope (local, free or cell), builtins and module dunders, and call-time reads of
        names the module binds once it has run (so most function bodies add nothing).
        """
        kind = scope.kind
        symbols = scope.symbols
        final = self.final
        verdicts: dict[str, bool] = {}
        for read in scope.reads:
            name = read[0]
            verdict = verdicts.get(name)
            if verdict is None:
                verdict = verdicts[name] = not (
                    (kind != "module" and symbols.get(name) not in _GLOBAL)
                    or (kind == "class" and name in _CLASS_DUNDERS)
                    or name in _BUILTINS
                    or name in _MODULE_DUNDERS
                )
            if verdict and read[6] != LAZY and not (read[5] == CALL and name in final):
                reads[read[4]].append(read)

    def _read(self, read: Read, *, extra: set[str]) -> None:
        """Check one candidate read against the module namespace of its time."""
        name, _, node, _, _, time, _, _ = read
        call_time = time == CALL
        if not call_time and (name in self.runtime or name in extra):
            return
        line, col = node.lineno, node.col_offset + 1
        if name in self.type_checking_only:
            found = diagnostic("NNR105", line=line, col=col, name=name)
        elif call_time and name in self.ever_bound:
            why = "deleted at module level ('del') before functions can use it"
            found = diagnostic("NNR102", line=line, col=col, name=name, why=why)
        elif name in self.final or name in self.ever_bound:
            why = (
                "used at import time before it is defined (or after it is deleted); "
                "move its definition above this line"
            )
            found = diagnostic("NNR102", line=line, col=col, name=name, why=why)
        elif self.star_modules:
            self.star_dependents.append(name)
            return
        else:
            if self.class_locals is None:
                self.class_locals = self._class_names()
            hint = (
                f" (class attributes are not visible in methods or comprehensions; "
                f"use self.{name} or ClassName.{name})"
                if name in self.class_locals
                else ""
            )
            found = diagnostic("NNR101", line=line, col=col, name=name, hint=hint)
        self.findings.append(found)

    # -- __all__ -----------------------------------------------------------------------------

    def _check_all(self) -> None:
        if "__getattr__" in self.final:
            return  # a module __getattr__ (PEP 562) may provide any exported name lazily
        body = self.tree.body
        first = _last_all_assignment(body)  # it replaced every earlier list: only it counts
        for index, statement in enumerate(body[first:], start=first):
            target: ast.expr | None = None
            value: ast.expr | None = None
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
            elif isinstance(statement, ast.AugAssign | ast.AnnAssign):
                target, value = statement.target, statement.value
            if not (isinstance(target, ast.Name) and target.id == "__all__"):
                continue
            if not isinstance(value, ast.List | ast.Tuple):
                continue  # built dynamically: nothing to check statically
            for element in value.elts:
                if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                    continue
                name = element.value
                if name in self.final:
                    continue
                if self.star_modules:
                    self.star_dependents.append(name)
                    continue
                line = element.lineno + (self.deltas[index] if self.deltas else 0)
                self.findings.append(
                    diagnostic("NNR104", line=line, col=element.col_offset + 1, name=name)
                )


def _last_all_assignment(body: list[ast.stmt]) -> int:
    """Position of the last statement of ``body`` that assigns ``__all__`` a new value (not
    ``+=``), else 0."""
    for position in range(len(body) - 1, -1, -1):
        statement = body[position]
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets = [statement.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return position
    return 0
