"""The scope tree's data (scopes, assignments, accesses) and Python's visibility rules on it.

Built by :func:`nnrag.pyscope.scopes.build_scopes` (the walk); the rules, written once
between the walk and the resolution here:

- function, lambda and comprehension scopes: a name bound anywhere in them is local to
  all of them; ``global``/``nonlocal`` redirect the binding; parameters are local;
- defaults, decorators, bases, class keywords, a comprehension's first iterable and
  (unless ``from __future__ import annotations``) signature annotations are evaluated in
  the enclosing scope;
- class bodies: functions and comprehensions nested in a class do not see its names; a
  read in the body itself sees the names the body bound before it (``LOAD_NAME``), the
  compiler calls every name the body binds local;
- a walrus in a comprehension binds in the nearest enclosing non-comprehension scope;
- ``except ... as``, ``match`` captures, ``import``, ``del``, ``for``/``with`` targets bind;
- a method reading ``super`` uses the class's implicit ``__class__`` cell;
- annotations Python never evaluates (PEP 563, local variable annotations) are accesses
  marked as such.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Literal

__all__ = [
    "CALL",
    "CELL",
    "EVALUATED",
    "FREE",
    "FUNCTION_LIKE",
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
    "ScopeKind",
    "ScopeTree",
    "SkipBody",
    "analyze",
    "dotted",
    "dotted_root",
    "is_type_checking",
]

ScopeKind = Literal["module", "class", "function", "lambda", "comprehension", "type-params"]

# The compiler's scopes of a name, with symtable's values.
LOCAL, GLOBAL_EXPLICIT, GLOBAL_IMPLICIT, FREE, CELL = 1, 2, 3, 4, 5

LOAD, CALL = 0, 1
"""When an access runs: while the module (or the class body) executes, or when a function is
called (any read inside a function or lambda body)."""
NOT_ANNOTATION, EVALUATED, LAZY = 0, 1, 2
"""Whether an access is in an annotation, and whether Python evaluates that annotation."""

FUNCTION_LIKE = frozenset({"function", "lambda", "comprehension", "type-params"})

Read = tuple[str, str, ast.Name, int, int, int, int, bool]
"""One read as the walk records it: ``(name, chain, node, order, top, time, annotation,
earlier)`` (the fields of :class:`Access`; ``earlier``: in a class body, the body bound the
name before the read). A tuple, not an object: a module has a read per ``Name`` load."""

SkipBody = Callable[[int, "ast.FunctionDef | ast.AsyncFunctionDef"], bool]
"""``(top-level statement index, def) -> whether to leave its body out``."""
BodyFilter = Callable[["ScopeTree"], SkipBody]
"""The bodies a walk leaves out, from the tree without them (see ``build_scopes``)."""


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else ``None`` (the one chain helper)."""
    found = dotted_root(node)
    return None if found is None else found[0]


def dotted_root(node: ast.expr) -> tuple[str, ast.Name] | None:
    """``(a.b.c, the Name a)`` for a chain of attributes on a name, else ``None``."""
    parts: list[str] = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    parts.reverse()
    return ".".join(parts), node


def is_type_checking(test: ast.expr) -> bool:
    """Whether an ``if`` test is ``TYPE_CHECKING``, bare or as any module's attribute."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class Scope:
    """One scope: its bindings and reads, and (after the walk) what the compiler calls them."""

    __slots__ = (
        "_accesses",
        "_assignments",
        "_targets",
        "bindings",
        "bound",
        "children",
        "earlier",
        "globals",
        "kind",
        "line",
        "name",
        "node",
        "nonlocals",
        "parent",
        "reads",
        "symbols",
        "used",
    )

    def __init__(
        self, kind: ScopeKind, node: ast.AST | None, name: str, line: int, parent: Scope | None
    ) -> None:
        self.kind: ScopeKind = kind
        self.node = node
        self.name = name
        """The name symtable gives the scope (``top``, the def/class name, ``lambda``,
        ``listcomp`` ...)."""
        self.line = line
        self.parent = parent
        self.children: list[Scope] = []
        self.bindings: list[Assignment] = []
        """Every binding made in this scope, in execution order (a ``global x`` in a
        function puts its ``x = ...`` in the module scope)."""
        self._assignments: dict[str, list[Assignment]] | None = None
        self.reads: list[Read] = []
        """Reads written in this scope, in execution order, as plain records (see
        :data:`Read`); :attr:`accesses` are the same as objects."""
        self._accesses: list[Access] | None = None
        self._targets: dict[str, Scope] = {}
        self.earlier: set[str] = set()
        """In a class body: the names the body has bound so far during the walk (a read
        there sees them, ``LOAD_NAME``); empty elsewhere."""
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.bound: set[str] = set()
        """Names a binding written here binds (even if declared global or nonlocal)."""
        self.used: set[str] = set()
        """Names read here (the compiler's view: not in PEP 563 annotations)."""
        self.symbols: dict[str, int] = {}
        """The compiler's scope of each name this scope binds, declares or reads, and of the
        names passing through it to nested scopes: ``LOCAL``, ``CELL``, ``FREE``,
        ``GLOBAL_EXPLICIT`` or ``GLOBAL_IMPLICIT``."""

    def __repr__(self) -> str:
        return f"<Scope {self.kind} {self.name!r} line {self.line}>"

    @property
    def assignments(self) -> dict[str, list[Assignment]]:
        """:attr:`bindings` by name."""
        if self._assignments is None:
            found: dict[str, list[Assignment]] = {}
            for assignment in self.bindings:
                found.setdefault(assignment.name, []).append(assignment)
            self._assignments = found
        return self._assignments

    @property
    def accesses(self) -> list[Access]:
        """:attr:`reads` as :class:`Access` objects with their targets (built on first use)."""
        if self._accesses is None:
            found: list[Access] = []
            for read in self.reads:
                name, chain, node, order, top, time, annotation, _ = read
                target = self.target(read)
                found.append(Access(name, chain, node, self, order, top, time, annotation, target))
            self._accesses = found
        return self._accesses

    def target(self, read: Read) -> Scope:
        """The scope whose binding a read written in this scope sees when it runs."""
        name = read[0]
        if self.kind == "class":
            if name in self.globals:
                return self.root()
            if read[7]:
                return self  # bound earlier in this class body
            return self.parent.resolve(name)  # type: ignore[union-attr]  # a class scope always has a parent
        return self.resolve(name)

    def resolve(self, name: str) -> Scope:
        """The scope whose binding a name read in this function-like (or module) scope sees
        at run time, by LEGB (written once; memoized per name)."""
        found = self._targets.get(name)
        if found is None:
            found = self._targets[name] = _lookup(self, name)
        return found

    def root(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    @property
    def function_like(self) -> bool:
        return self.kind in FUNCTION_LIKE

    def in_function(self) -> bool:
        """Whether this scope runs when a function is called (inside a def or lambda)."""
        scope: Scope | None = self
        while scope is not None:
            if scope.kind in ("function", "lambda"):
                return True
            scope = scope.parent
        return False

    def walk(self) -> Iterator[Scope]:
        """This scope and every scope nested in it, parents first."""
        pending = [self]
        while pending:
            scope = pending.pop()
            yield scope
            pending.extend(reversed(scope.children))


class Assignment:
    """One binding of a name: by what node, in which scope, where in the module."""

    __slots__ = (
        "conditional",
        "kind",
        "lexical",
        "name",
        "node",
        "order",
        "scope",
        "statement",
        "top",
        "type_checking",
    )

    def __init__(  # noqa: PLR0917  # built once per binding: positional is measurably faster
        self,
        name: str,
        node: ast.AST,
        kind: str,
        scope: Scope,
        lexical: Scope,
        statement: ast.stmt | None,
        order: int,
        top: int,
        conditional: bool,
        type_checking: bool,
    ) -> None:
        self.name = name
        self.node = node
        """The binding node: ``Name``, ``arg``, ``alias``, a def/class, ``ExceptHandler``,
        a match pattern."""
        self.kind = kind
        """``store``, ``del``, ``param``, ``import``, ``def``, ``class``, ``except``,
        ``match``, ``walrus``, ``annotation`` (``x: int`` without value: the compiler's
        local, no run-time binding), ``type-param``."""
        self.scope = scope
        """The scope the name is bound in."""
        self.lexical = lexical
        """The scope the binding is written in (differs under ``global``/``nonlocal``)."""
        self.statement = statement
        """For imports: the ``Import``/``ImportFrom`` statement."""
        self.order = order
        """Position in the walk (shared with the reads: execution order)."""
        self.top = top
        """Index of the module's top-level statement the binding is in."""
        self.conditional = conditional
        """Inside ``if``/``for``/``while``/``with``/``try``/``match`` at any depth."""
        self.type_checking = type_checking
        """Inside an ``if TYPE_CHECKING:`` body."""

    def __repr__(self) -> str:
        return f"<Assignment {self.kind} {self.name!r} in {self.scope!r}>"


class Access:
    """One read of a name, with the dotted chain read through it."""

    __slots__ = ("annotation", "chain", "name", "node", "order", "scope", "target", "time", "top")

    def __init__(  # noqa: PLR0917  # built once per read: positional is measurably faster
        self,
        name: str,
        chain: str,
        node: ast.Name,
        scope: Scope,
        order: int,
        top: int,
        time: int,
        annotation: int,
        target: Scope | None = None,
    ) -> None:
        self.name = name
        self.chain = chain
        """``a.b.c`` for a load of ``a.b.c``; for a store or ``del`` of ``a.b.c``, ``a.b``."""
        self.node = node
        self.scope = scope
        """The scope the read is written in."""
        self.order = order
        self.top = top
        self.time = time
        """``LOAD`` or ``CALL``."""
        self.annotation = annotation
        """``NOT_ANNOTATION``, ``EVALUATED`` or ``LAZY`` (never evaluated by Python)."""
        self.target: Scope | None = target
        """The scope whose binding the read sees at run time (the module scope: module-level
        or builtin)."""

    def __repr__(self) -> str:
        return f"<Access {self.chain!r} in {self.scope!r}>"


class ScopeTree:
    """The scopes of one module (or of one unit's text), built by :func:`build_scopes`."""

    __slots__ = ("_by_node", "future", "imports", "lazy_annotations", "module")

    def __init__(self, module: Scope, future: list[str], imports: list[Assignment]) -> None:
        self.module = module
        self.future = future
        """Names imported from ``__future__``."""
        self.lazy_annotations = "annotations" in future
        self.imports = imports
        """Every import binding in execution order, ``from m import *`` as the name ``*``
        (not in any scope's assignments)."""
        self._by_node: dict[int, Access | Assignment] | None = None

    def scopes(self) -> Iterator[Scope]:
        return self.module.walk()

    def accesses(self) -> Iterator[Access]:
        for scope in self.module.walk():
            yield from scope.accesses

    def at(self, node: ast.AST) -> Access | Assignment | None:
        """The access of a ``Name`` read, or the assignment a binding node makes."""
        if self._by_node is None:
            found: dict[int, Access | Assignment] = {}
            for scope in self.module.walk():
                for access in scope.accesses:
                    found[id(access.node)] = access
                for assignment in scope.bindings:
                    found[id(assignment.node)] = assignment
            for assignment in self.imports:
                found[id(assignment.node)] = assignment
            self._by_node = found
        return self._by_node.get(id(node))

    def release(self) -> None:
        """Break the tree's reference cycles (scope and parent, scope and its assignments,
        accesses and memos) and empty it.

        Without this a dropped tree, and the AST its reads point into, is freed only by the
        cyclic garbage collector, whose passes then walk every tree built since the last one
        (measured on timm's 304 files: half the index analysis' CPU). Callers that are done
        with a tree release it; it is empty afterwards.
        """
        for scope in list(self.module.walk()):
            scope.parent = None
            scope.node = None
            scope.children = []
            scope.bindings = []
            scope.reads = []
            scope._accesses = None
            scope._assignments = None
            scope._targets = {}
        self.imports = []
        self._by_node = None

    def binds_module_name(self, node: ast.AST) -> bool:
        """Whether a binding node (a stored ``Name``, a def, an import alias) binds at module
        level."""
        found = self.at(node)
        return isinstance(found, Assignment) and found.scope is self.module


# --------------------------------------------------------------------------- resolution


def _lookup(scope: Scope, name: str) -> Scope:
    """LEGB from ``scope`` outwards: class bodies are passed over (their ``global``
    declarations aside); the module scope stands for module-level or builtin."""
    while True:
        kind = scope.kind
        if kind == "module" or name in scope.globals:
            return scope.root()
        if kind != "class":
            if name == "__class__" and scope.parent is not None and scope.parent.kind == "class":
                return scope.parent  # the implicit cell of a method's class
            if name in scope.bound and name not in scope.nonlocals:
                return scope
        scope = scope.parent  # type: ignore[assignment]  # only the module has no parent


def analyze(scope: Scope, bound: set[str] | None, glob: set[str]) -> set[str]:
    """Classify every name of ``scope`` and its children as CPython's symtable.c does.

    ``bound``: names bound in enclosing function scopes; ``glob``: names declared global in
    enclosing scopes. Returns the names free in ``scope`` or in its children and not bound
    in it.
    """
    symbols = scope.symbols
    is_class = scope.kind == "class"
    function_like = scope.kind in FUNCTION_LIKE
    local: set[str] = set()
    free: set[str] = set()
    if is_class:
        new_global = set(glob)
        new_bound = set(bound) if bound is not None else set()
    declared, nonlocals, names_bound = scope.globals, scope.nonlocals, scope.bound
    for name in scope.used | names_bound | declared | nonlocals:
        if name in declared:
            symbols[name] = GLOBAL_EXPLICIT
            glob.add(name)
            if bound is not None:
                bound.discard(name)
        elif name in nonlocals:
            symbols[name] = FREE
            free.add(name)
        elif name in names_bound:
            symbols[name] = LOCAL
            local.add(name)
            glob.discard(name)
        elif bound is not None and name in bound:
            symbols[name] = FREE
            free.add(name)
        else:
            symbols[name] = GLOBAL_IMPLICIT
    if is_class:
        new_bound.add("__class__")
    else:
        new_bound = set(local) if function_like else set()
        if bound is not None:
            new_bound |= bound
        new_global = set(glob)
    child_free: set[str] = set()
    for child in scope.children:
        child_free |= analyze(child, set(new_bound), set(new_global))
    if function_like:
        for name in local & child_free:
            symbols[name] = CELL
            child_free.discard(name)
    if is_class:
        child_free.discard("__class__")
    for name in child_free:
        if name not in symbols and (bound is None or name in bound):
            symbols[name] = FREE
    return free | child_free
