"""Exact free-name resolution of one block file: the compiler's scopes (symtable) over its ast."""

from __future__ import annotations

import ast
import builtins
import symtable
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nnrag.diagnostics import diagnostic
from nnrag.model import Diagnostic
from nnrag.pyscope.bindings import is_type_checking

__all__ = ["unresolved_names"]

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

# The compiler's symbol flags, as `symtable.Symbol` decodes them (re-exported from _symtable).
_SCOPE_OFF: int = symtable.SCOPE_OFF  # type: ignore[attr-defined]  # typeshed omits the flags
_SCOPE_MASK: int = symtable.SCOPE_MASK  # type: ignore[attr-defined]  # typeshed omits the flags
_DEF_LOCAL: int = symtable.DEF_LOCAL  # type: ignore[attr-defined]  # typeshed omits the flags
_GLOBAL_EXPLICIT: int = symtable.GLOBAL_EXPLICIT  # type: ignore[attr-defined]  # idem
_GLOBAL_IMPLICIT: int = symtable.GLOBAL_IMPLICIT  # type: ignore[attr-defined]  # idem
_FREE: int = symtable.FREE  # type: ignore[attr-defined]  # typeshed omits the flags
_LOCAL: int = symtable.LOCAL  # type: ignore[attr-defined]  # typeshed omits the flags
_GLOBAL = frozenset({_GLOBAL_EXPLICIT, _GLOBAL_IMPLICIT})
_INLINED_COMPREHENSIONS = sys.version_info >= (3, 12)
"""PEP 709: comprehensions have no symbol table of their own; their names live in the
enclosing one (a class body's attributes included)."""


def _raw_symbols(table: symtable.SymbolTable) -> Mapping[str, int] | None:
    """``name -> flags`` of a table, what ``Symbol`` wraps (None if this Python hides it).

    ``SymbolTable.lookup`` builds a ``Symbol`` and scans every child table per name; reading
    the flags directly is what makes the scan of every scope affordable.
    """
    symbols = getattr(getattr(table, "_table", None), "symbols", None)
    return symbols if isinstance(symbols, dict) else None


def _scope(table: symtable.SymbolTable, name: str) -> int | None:
    """The compiler's scope of ``name`` in a function or class table (None: not there).

    From the flags, not ``Symbol.is_global``: Python 3.11 takes the table of a function named
    ``top`` for the module's and calls every name bound in it global.
    """
    symbols = _raw_symbols(table)
    if symbols is not None:
        flags = symbols.get(name)
        return None if flags is None else (flags >> _SCOPE_OFF) & _SCOPE_MASK
    try:
        symbol = table.lookup(name)
    except KeyError:
        return None
    if symbol.is_free():
        return _FREE
    return _GLOBAL_IMPLICIT if symbol.is_global() else _LOCAL


def unresolved_names(
    tree: ast.Module,
    table: symtable.SymbolTable,
    *,
    shortcut: bool = True,
    parts: Sequence[tuple[symtable.SymbolTable, int]] | None = None,
    deltas: Sequence[int] | None = None,
) -> list[Diagnostic]:
    """NNR101-NNR105 issues of a parsed file and its top-level symbol table.

    With ``shortcut``, function bodies are walked only if the symbol tables leave a name read
    at call time unresolved (same issues, less work); without, always. ``parts``, if given,
    replace ``table``: for each top-level statement, the table of that statement compiled on
    its own and how many lines the table's lines are behind the tree's. ``deltas``: how many
    lines each top-level statement's tree is behind the file (trees parsed piece by piece).
    """
    return _NameChecker(tree, table, shortcut=shortcut, parts=parts, deltas=deltas).run()


_COMPREHENSION_SCOPES: dict[type[ast.expr], str] = {
    ast.ListComp: "listcomp",
    ast.SetComp: "setcomp",
    ast.DictComp: "dictcomp",
    ast.GeneratorExp: "genexpr",
}
_SCOPED: frozenset[type[ast.AST]] = frozenset(
    {
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.Lambda,
        ast.ClassDef,
        *_COMPREHENSION_SCOPES,
        ast.AnnAssign,
        ast.If,
    }
)
"""Nodes the name walk handles specially (scopes, annotations, TYPE_CHECKING blocks)."""
_LEAVES: frozenset[type[ast.AST]] = frozenset(
    {
        ast.Constant,
        ast.Load,
        ast.Store,
        ast.Del,
        ast.Pass,
        ast.Break,
        ast.Continue,
        ast.Global,
        ast.Nonlocal,
        ast.Import,
        ast.ImportFrom,
        *(
            cls
            for base in (ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
            for cls in base.__subclasses__()
        ),
    }
)
"""Nodes without a name read below them."""


def _scope_key(node: ast.AST) -> tuple[str, int] | None:
    """``(name, line)`` of the symbol table a scope-creating node opens."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name, node.lineno
    if isinstance(node, ast.Lambda):
        return "lambda", node.lineno
    if isinstance(node, ast.expr) and type(node) in _COMPREHENSION_SCOPES:
        return _COMPREHENSION_SCOPES[type(node)], node.lineno
    return None


def _bound_names(statement: ast.stmt) -> tuple[set[str], set[str]]:
    """Names a top-level statement binds in the module, and names it deletes unconditionally."""
    bound: set[str] = set()
    deleted: set[str] = set()
    if isinstance(statement, ast.Delete):
        for target in statement.targets:
            if isinstance(target, ast.Name):
                deleted.add(target.id)
        return bound, deleted

    def visit(node: ast.AST, in_comprehension: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
            for decorator in node.decorator_list:
                visit(decorator, in_comprehension)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    bound.add(alias.asname or alias.name.split(".", 1)[0])
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if not in_comprehension:
                bound.add(node.id)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            bound.add(node.target.id)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        comprehension = in_comprehension or isinstance(
            node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
        )
        for child in ast.iter_child_nodes(node):
            visit(child, comprehension)

    visit(statement, False)
    return bound, deleted


@dataclass
class _NameChecker:
    """Walks the tree alongside the symbol tables and reports unresolved reads."""

    tree: ast.Module
    table: symtable.SymbolTable
    shortcut: bool = True
    parts: Sequence[tuple[symtable.SymbolTable, int]] | None = None
    deltas: Sequence[int] | None = None
    findings: list[Diagnostic] = field(default_factory=list)
    future_annotations: bool = False
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
    walk_bodies: bool = True
    """Whether function bodies must be walked: False once the symbol tables show that no
    name read at call time can be unresolved (every such read is a local, a free variable,
    a builtin or in :attr:`final`), the common case of a closed block."""
    star_modules: list[tuple[str, int, int]] = field(default_factory=list)
    star_dependents: list[str] = field(default_factory=list)
    _used: dict[int, set[int]] = field(default_factory=dict)
    _children: dict[int, list[symtable.SymbolTable]] = field(default_factory=dict)
    _inlined: list[tuple[set[str], bool]] = field(default_factory=list)
    """Target names of the inlined comprehensions being walked, and whether in a class body."""
    _bindings: list[tuple[set[str], set[str]]] = field(default_factory=list)
    """What each top-level statement binds and deletes (:meth:`_statement_bindings`)."""
    _offset: int = 0
    """Lines the current statement's table is behind the file (with :attr:`parts`)."""

    def run(self) -> list[Diagnostic]:
        self.future_annotations = any(
            isinstance(s, ast.ImportFrom)
            and s.module == "__future__"
            and any(a.name == "annotations" for a in s.names)
            for s in self.tree.body
        )
        self._module_namespace()
        candidates = self._scan_tables()
        self.walk_bodies = (
            not self.shortcut
            or candidates is None
            or any(
                name not in self.final and name not in _BUILTINS and name not in _MODULE_DUNDERS
                for name in candidates
            )
        )
        for index, statement in enumerate(self.tree.body):
            bound, deleted = self._bindings[index]
            table = self.table
            if self.parts is not None:  # its own table: ids and lines of its own
                table, self._offset = self.parts[index]
                self._used, self._children = {}, {}
            found = len(self.findings)
            self._walk(statement, table, call_time=False, extra=bound)
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

    def _statement_bindings(self, statement: ast.stmt) -> tuple[set[str], set[str]]:
        if isinstance(statement, ast.If) and is_type_checking(statement.test):
            bound: set[str] = set()
            for child in statement.orelse:
                bound |= _bound_names(child)[0]
            return bound, set()
        return _bound_names(statement)

    def _module_namespace(self) -> None:
        checking: set[str] = set()
        for index, statement in enumerate(self.tree.body):
            if isinstance(statement, ast.If) and is_type_checking(statement.test):
                for child in statement.body:
                    checking |= _bound_names(child)[0]
            bound, deleted = self._statement_bindings(statement)
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

    def _scan_tables(self) -> set[str] | None:
        """Add names assigned under ``global`` in any scope to :attr:`final`; return the names
        a scope run at call time may read as globals (None: unknown, walk every body).

        The candidates are a superset: a call-time read reaches the namespace check only if
        its scope's table says it is global (or, with inlined comprehensions, it is a class
        body's name).
        """
        candidates: set[str] | None = set()
        pending = [(child, False) for top in self._tops() for child in top.get_children()]
        while pending:
            table, outer_call_time = pending.pop()
            kind = table.get_type()
            call_time = outer_call_time or kind != "class"  # a function body runs when called
            symbols = _raw_symbols(table)
            if symbols is None:  # a Python whose symtable hides the flags: the public API
                candidates = None
                for symbol in table.get_symbols():
                    if symbol.is_declared_global() and symbol.is_assigned():
                        self.final.add(symbol.get_name())
            else:
                every = call_time and kind == "class" and _INLINED_COMPREHENSIONS
                for name, flags in symbols.items():
                    scope = (flags >> _SCOPE_OFF) & _SCOPE_MASK
                    if scope == _GLOBAL_EXPLICIT and flags & _DEF_LOCAL:
                        self.final.add(name)
                    if candidates is not None and call_time and (every or scope in _GLOBAL):
                        candidates.add(name)
            pending += [(child, call_time) for child in table.get_children()]
        return candidates

    def _tops(self) -> list[symtable.SymbolTable]:
        """The module's table, or each distinct table of :attr:`parts`."""
        if self.parts is None:
            return [self.table]
        return list({id(table): table for table, _ in self.parts}.values())

    def _class_names(self) -> set[str]:
        """Names assigned in any class body, at any depth."""
        names: set[str] = set()
        pending = list(self._tops())
        while pending:
            table = pending.pop()
            if table.get_type() == "class":
                names |= {s.get_name() for s in table.get_symbols() if s.is_assigned()}
            pending += table.get_children()
        return names

    # -- walk --------------------------------------------------------------------------------

    def _child_table(
        self, table: symtable.SymbolTable, node: ast.AST
    ) -> symtable.SymbolTable | None:
        key = _scope_key(node)
        if key is not None and self._offset:
            key = key[0], key[1] - self._offset
        used = self._used.setdefault(table.get_id(), set())
        children = self._children.get(table.get_id())
        if children is None:
            children = self._children[table.get_id()] = table.get_children()
        for index, child in enumerate(children):
            if index not in used and (child.get_name(), child.get_lineno()) == key:
                used.add(index)
                return child
        return None

    def _walk_all(
        self,
        nodes: Iterable[ast.AST | None],
        table: symtable.SymbolTable,
        *,
        call_time: bool,
        extra: set[str],
    ) -> None:
        for node in nodes:
            if node is not None:
                self._walk(node, table, call_time=call_time, extra=extra)

    def _annotation(
        self,
        node: ast.expr | None,
        table: symtable.SymbolTable,
        *,
        call_time: bool,
        extra: set[str],
        evaluated: bool = True,
    ) -> None:
        if node is not None and evaluated and not self.future_annotations:
            self._walk(node, table, call_time=call_time, extra=extra)

    def _walk(
        self, node: ast.AST, table: symtable.SymbolTable, *, call_time: bool, extra: set[str]
    ) -> None:
        walk = self._walk
        kind = type(node)
        if kind is ast.Name:
            assert isinstance(node, ast.Name)  # for mypy: `kind is` does not narrow
            if not isinstance(node.ctx, ast.Store):
                self._read(node, table, call_time=call_time, extra=extra)
            return
        if kind in _LEAVES:
            return
        if kind not in _SCOPED:  # the common case: just the children, in field order
            if kind is ast.AugAssign:
                assert isinstance(node, ast.AugAssign)
                if isinstance(node.target, ast.Name):
                    self._read(node.target, table, call_time=call_time, extra=extra)
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.AST):
                            walk(item, table, call_time=call_time, extra=extra)
                elif isinstance(value, ast.AST):
                    walk(value, table, call_time=call_time, extra=extra)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            self._walk_all(
                [*arguments.defaults, *arguments.kw_defaults],
                table,
                call_time=call_time,
                extra=extra,
            )
            if not isinstance(node, ast.Lambda):
                self._walk_all(node.decorator_list, table, call_time=call_time, extra=extra)
                every = [
                    *arguments.posonlyargs,
                    *arguments.args,
                    *arguments.kwonlyargs,
                    arguments.vararg,
                    arguments.kwarg,
                ]
                for argument in every:
                    if argument is not None:
                        self._annotation(
                            argument.annotation, table, call_time=call_time, extra=extra
                        )
                self._annotation(node.returns, table, call_time=call_time, extra=extra)
            inner = self._child_table(table, node)
            if inner is None or not self.walk_bodies:
                return
            body = [node.body] if isinstance(node, ast.Lambda) else node.body
            for statement in body:
                walk(statement, inner, call_time=True, extra=extra)
            return
        if isinstance(node, ast.ClassDef):
            self._walk_all(
                [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)],
                table,
                call_time=call_time,
                extra=extra,
            )
            inner = self._child_table(table, node)
            if inner is not None:
                for statement in node.body:
                    walk(statement, inner, call_time=call_time, extra=extra)
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            first, *rest = node.generators
            walk(first.iter, table, call_time=call_time, extra=extra)
            inner = self._child_table(table, node)
            if inner is None:  # inlined (PEP 709, Python 3.12+): scope it here
                targets = {
                    n.id
                    for generator in node.generators
                    for n in ast.walk(generator.target)
                    if isinstance(n, ast.Name)
                }
                self._inlined.append((targets, table.get_type() == "class"))
                try:
                    self._comprehension_body(node, rest, table, call_time=call_time, extra=extra)
                finally:
                    self._inlined.pop()
                return
            self._comprehension_body(node, rest, inner, call_time=call_time, extra=extra)
            return
        if isinstance(node, ast.AnnAssign):
            evaluated = table.get_type() != "function"
            self._annotation(
                node.annotation, table, call_time=call_time, extra=extra, evaluated=evaluated
            )
            self._walk_all([node.target, node.value], table, call_time=call_time, extra=extra)
            return
        if (
            isinstance(node, ast.If)
            and table.get_type() == "module"
            and is_type_checking(node.test)
        ):
            walk(node.test, table, call_time=call_time, extra=extra)
            self._walk_all(node.orelse, table, call_time=call_time, extra=extra)
            return
        for child in ast.iter_child_nodes(node):
            walk(child, table, call_time=call_time, extra=extra)

    def _comprehension_body(
        self,
        node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp,
        rest: list[ast.comprehension],
        table: symtable.SymbolTable,
        *,
        call_time: bool,
        extra: set[str],
    ) -> None:
        """Everything of a comprehension but its first iterable, in its own scope's table."""
        first = node.generators[0]
        self._walk_all([first.target, *first.ifs], table, call_time=call_time, extra=extra)
        for generator in rest:
            self._walk_all(
                [generator.iter, generator.target, *generator.ifs],
                table,
                call_time=call_time,
                extra=extra,
            )
        if isinstance(node, ast.DictComp):
            self._walk_all([node.key, node.value], table, call_time=call_time, extra=extra)
        else:
            self._walk(node.elt, table, call_time=call_time, extra=extra)

    def _read(
        self, node: ast.Name, table: symtable.SymbolTable, *, call_time: bool, extra: set[str]
    ) -> None:
        name = node.id
        kind = table.get_type()
        if any(name in targets for targets, _ in self._inlined):
            return  # a variable of an enclosing inlined comprehension
        if any(in_class for _, in_class in self._inlined):
            kind = "function"  # class attributes are invisible in comprehensions
        if kind == "function" and table.get_type() == "class":
            scope = _scope(table, name)
            if scope is not None and (scope == _FREE or name in _CLASS_DUNDERS):
                return  # from an enclosing function
        elif kind != "module":
            scope = _scope(table, name)
            if scope is None:  # a scope symtable does not report (newer Pythons): be lenient
                return
            if scope not in _GLOBAL:
                return  # local, free or cell: bound in a function scope the compiler found
            if kind == "class" and name in _CLASS_DUNDERS:
                return
        if name in _BUILTINS or name in _MODULE_DUNDERS:
            return
        if name in self.final if call_time else (name in self.runtime or name in extra):
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
        for index, statement in enumerate(self.tree.body):
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
