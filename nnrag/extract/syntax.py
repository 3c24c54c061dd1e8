"""Syntax questions about one unit's statements (pure functions over ``ast`` trees)."""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator, Mapping

from nnrag.pyscope.scopes import dotted as _dotted

__all__ = [
    "assigns_a_call",
    "dotted",
    "handed_names",
    "handed_strings",
    "is_empty_container",
    "lookups_only",
    "may_find",
    "mutates",
    "namespace_keys",
    "nodes",
    "parent_map",
    "patched_attributes",
    "push_children",
    "reads_namespace",
    "type_strings",
    "type_tests",
    "writes",
]

_EMPTY_FACTORIES = frozenset({"dict", "OrderedDict", "defaultdict", "collections.OrderedDict"})
_EMPTY_FACTORIES |= frozenset({"collections.defaultdict"})
_BUILTIN_NAMES = frozenset(dir(builtins))
_TRIES: tuple[type[ast.Try], ...] = tuple(
    t
    for t in (ast.Try, getattr(ast, "TryStar", None))
    if t is not None  # TryStar: >= 3.11
)
_WRITERS = frozenset({"update", "setdefault", "__setitem__"})
_NAMESPACE_READS = frozenset({"get", "items", "values", "keys", "__getitem__", "copy", "pop"})
_ATTRIBUTE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")


def mutates(stmt: ast.stmt, names: set[str]) -> bool:
    """``@X.method(...)``/``@X.method`` on a definition, a bare ``X.method(...)`` call, or a
    bare call of a module function handed ``X`` (``set_defaults(cfg)``: it fills ``X`` in)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        calls = [d.func if isinstance(d, ast.Call) else d for d in stmt.decorator_list]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        calls = [stmt.value.func]
        if _hands_over(stmt.value, names):
            return True
    else:
        return False
    for func in calls:
        if isinstance(func, ast.Attribute) and "register" in func.attr.lower():
            continue  # a registration: carried by its key (see nnrag.extract.registries)
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if func is not root and isinstance(root, ast.Name) and root.id in names:
            return True
    return False


def _hands_over(call: ast.Call, names: set[str]) -> bool:
    """``f(X)``/``f(key=X)`` with ``f`` a plain name that is not a builtin (``print(X)``)."""
    if not isinstance(call.func, ast.Name) or call.func.id in _BUILTIN_NAMES:
        return False
    given = [*call.args, *(keyword.value for keyword in call.keywords)]
    return any(isinstance(arg, ast.Name) and arg.id in names for arg in given)


def assigns_a_call(body: list[ast.stmt]) -> bool:
    """A statement of ``body``, or of the branches of its ``if``/``try``, binds a call's
    result (``X = Factory()``, ``try: X = Node() except ImportError: X = None``)."""
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
            return True
        if isinstance(stmt, ast.If) and assigns_a_call(stmt.body + stmt.orelse):
            return True
        if isinstance(stmt, _TRIES) and assigns_a_call(
            stmt.body + stmt.orelse + [s for handler in stmt.handlers for s in handler.body]
        ):
            return True
    return False


def patched_attributes(tree: ast.Module) -> tuple[tuple[str, str], ...]:
    """``(receiver, attribute)`` of each ``receiver.attribute = value`` when every statement
    of a module-level unit is such an assignment (``logging.Logger.warning_once = f``: a
    patch importing the module applies to an object); empty otherwise."""
    found: list[tuple[str, str]] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        else:
            return ()
        for target in targets:
            receiver = dotted(target.value) if isinstance(target, ast.Attribute) else None
            if receiver is None or not isinstance(target, ast.Attribute):
                return ()
            found.append((receiver, target.attr))
    return tuple(found)


def dotted(node: ast.expr) -> str | None:
    """:func:`nnrag.pyscope.scopes.dotted` (the one chain helper), and a chain on
    ``sys.modules[name]`` too (``sys.modules[__name__].x``: a module's own namespace)."""
    found = _dotted(node)
    if found is not None:
        return found
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Name)
        and _dotted(node.value) == "sys.modules"
    ):
        parts.append(f"sys.modules[{node.slice.id}]")
        return ".".join(reversed(parts))
    return None


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node's parent under ``tree``, by the child's ``id``."""
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def lookups_only(tree: ast.Module, chain: str) -> tuple[tuple[str, ...], bool] | None:
    """See :meth:`nnrag.extract.needs.UnitScanner.lookups`."""
    parents = parent_map(tree)
    names: list[str] = []
    dynamic = False
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            continue
        if dotted(node) != chain:
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute):
            continue  # ``m.x``: a longer chain
        if (
            isinstance(parent, ast.Call)
            and dotted(parent.func) in ("getattr", "hasattr")
            and parent.args
            and parent.args[0] is node
        ):
            name = parent.args[1] if len(parent.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.append(name.value)
            else:
                dynamic = True
            continue
        return None
    return tuple(dict.fromkeys(names)), dynamic


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _arguments(arguments: ast.arguments) -> list[ast.arg]:
    named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return named + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]


_CONSTRUCTORS = frozenset({"__init__", "__new__"})


def _building(klass: ast.ClassDef) -> set[int]:
    """The methods of ``klass`` that run only while it is built: its constructors, and the
    methods only they (or such methods) call on ``self`` (``self._init_layers(cfg)``)."""
    defs = {item.name: item for item in klass.body if isinstance(item, _DEFS)}
    callers: dict[str, set[str]] = {}
    for name, item in defs.items():
        for node in ast.walk(item):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("self", "cls")
                and node.func.attr in defs
            ):
                callers.setdefault(node.func.attr, set()).add(name)
    found = {name for name in defs if name in _CONSTRUCTORS}
    grown = True
    while grown:
        grown = False
        for name, by in callers.items():
            if name not in found and by <= found:
                found.add(name)
                grown = True
    return {id(defs[name]) for name in found}


def type_tests(
    tree: ast.Module, *, method: bool = False, constructors: bool = False
) -> frozenset[str]:
    """See :meth:`nnrag.extract.needs.UnitScanner.type_tests` (one walk that sees a parent
    before its children, so what it marks is known when they come). ``method``: ``tree`` is
    one method of a class on its own (a part of a class carried method by method).
    ``constructors``: a constructor's (``__init__``, ``__new__``) parameter annotations count
    as tests too (what is left is what the block's other methods receive)."""
    tests: set[int] = set()
    fields: set[int] = set()  # a class body's annotations are fields (dataclass, NamedTuple)
    # a class body's defs: their parameters are what callers build
    methods: set[int] = {id(s) for s in tree.body if isinstance(s, _DEFS)} if method else set()
    inner: set[int] = set()  # the value of an attribute: part of a longer chain
    building: set[int] = set()  # methods only constructors call (``constructors``)
    weak: set[str] = set()
    strong: set[str] = set()
    for node in nodes(tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            if isinstance(node, ast.Attribute):
                inner.add(id(node.value))
            if id(node) in inner:
                continue
            chain = dotted(node)
            if chain is not None:
                (weak if id(node) in tests else strong).add(chain)
        elif isinstance(node, ast.ClassDef):
            fields.update(id(item) for item in node.body if isinstance(item, ast.AnnAssign))
            methods.update(id(item) for item in node.body if isinstance(item, _DEFS))
            if constructors:
                building |= _building(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            kinds = node.args[1]
            tests.update(id(e) for e in (kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]))
        elif isinstance(node, ast.Compare) and all(
            isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops
        ):
            tests.update(id(operand) for operand in (node.left, *node.comparators))
        # a method's parameter annotation is not a type test: it says what callers pass in,
        # and whoever builds the block (a user, the prober) needs the real class for it; a
        # function's is (a function builds no argument: its callers, in the closure, read
        # what they build, and the prober builds only constructors' and forward's arguments)
        annotations: list[ast.expr | None] = []
        if isinstance(node, _DEFS):
            annotations.append(node.returns)
            if (
                id(node) not in methods
                or id(node) in building
                or (constructors and node.name in _CONSTRUCTORS)
            ):
                annotations += [a.annotation for a in _arguments(node.args)]
        elif isinstance(node, ast.AnnAssign) and id(node) not in fields:
            annotations.append(node.annotation)
        for annotation in annotations:
            if annotation is not None:
                tests.update(id(part) for part in nodes(annotation))
    return frozenset(weak - strong)


def may_find(text: str, roots: set[str]) -> bool:
    """Whether ``UnitScanner.findings`` can find anything in a unit without registries:
    ``globals()``/``vars()``, or a call that needs ``__name__`` (``getattr(sys.modules[
    __name__], ...)``) or an import by name (``import_module``, ``__import__``) in the text.
    Most units read ``getattr`` on objects only; they are not parsed again."""
    if roots & {"globals", "vars"}:
        return True
    return "__name__" in text or "import_module" in text or "__import__" in text


def reads_namespace(call: ast.Call, parents: Mapping[int, ast.AST]) -> bool:
    """``globals()[name]``, ``globals().get(name)``, ``name in globals()``, iteration over it:
    a lookup by string (not a write, not an identity check like ``f_globals is globals()``)."""
    parent = parents.get(id(call))
    if isinstance(parent, ast.Subscript):
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute):
        return parent.attr in _NAMESPACE_READS
    if isinstance(parent, ast.Compare):
        return any(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    return isinstance(parent, (ast.For, ast.comprehension))


def namespace_keys(tree: ast.Module) -> Iterator[tuple[re.Pattern[str], bool]]:
    """For each ``globals()[key]`` / ``globals().get(key)`` (or ``vars()``) in ``tree`` whose
    key is a string with constant parts (``"act_" + name``, ``f"emulate_int{bits}_{method}"``):
    the pattern the names it can look up match, and whether the read runs at load time
    (outside every function). A key without four constant characters matches too much to
    say anything."""
    parents = parent_map(tree)
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and dotted(node.func) in ("globals", "vars")
            and not node.args
            and reads_namespace(node, parents)
        ):
            continue
        parent = parents[id(node)]
        if isinstance(parent, ast.Subscript):
            key: ast.expr | None = parent.slice
        elif isinstance(parent, ast.Attribute) and parent.attr == "get":
            call = parents.get(id(parent))
            key = call.args[0] if isinstance(call, ast.Call) and call.args else None
        else:
            key = None
        parts = _key_parts(key) if key is not None else None
        if parts is None or sum(len(p) for p in parts if p is not None) < 4:
            continue
        pattern = "".join(".*" if p is None else re.escape(p) for p in parts)
        yield re.compile(pattern), _at_load(node, parents)


def handed_names(tree: ast.Module) -> Iterator[tuple[str, bool]]:
    """(name, the call runs at load time) for each string of :func:`handed_strings`
    (``"Binomial.approx_thresh"``: its first part)."""
    parents: dict[int, ast.AST] | None = None
    for text, _, call in handed_strings(tree):
        parents = parents if parents is not None else parent_map(tree)
        yield text.partition(".")[0], _at_load(call, parents)


def handed_strings(tree: ast.AST) -> Iterator[tuple[str, ast.Constant, ast.Call]]:
    """Each string that names an attribute (``"JITTER"``, ``"Binomial.approx_thresh"``) which
    a call passes together with the module's ``__name__`` (``register("jitter", __name__,
    "JITTER")``), with the call: the callee can import the module by that name and read the
    attribute the string names. Yields (text, its node, the call)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        values = [*node.args, *(keyword.value for keyword in node.keywords)]
        if not any(isinstance(v, ast.Name) and v.id == "__name__" for v in values):
            continue
        for value in values:
            if (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and _ATTRIBUTE.match(value.value)
            ):
                yield value.value, value, node


def _at_load(node: ast.AST, parents: Mapping[int, ast.AST]) -> bool:
    """Whether ``node`` runs as its module loads (no function or lambda encloses it)."""
    above = parents.get(id(node))
    while above is not None:
        if isinstance(above, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        above = parents.get(id(above))
    return True


def _key_parts(node: ast.expr) -> list[str | None] | None:
    """The constant parts of a string expression, ``None`` for each computed part; ``None``
    when it is no string expression at all."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return [
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
            for v in node.values
        ]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _key_parts(node.left), _key_parts(node.right)
        if left is None and right is None:
            return None
        return [*(left or [None]), *(right or [None])]
    return None


def is_empty_container(statement: ast.stmt) -> bool:
    value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
    if isinstance(value, ast.Dict):
        return not value.keys
    if isinstance(value, ast.Call) and dotted(value.func) in _EMPTY_FACTORIES:
        return not value.keywords and len(value.args) <= (
            1 if dotted(value.func) in ("defaultdict", "collections.defaultdict") else 0
        )
    return False


def writes(tree: ast.Module, name: str) -> bool:
    """``name[...] = ...``, ``name.update(...)`` or ``name.setdefault(...)`` inside ``tree``."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Store)
            and dotted(node.value) == name
        ):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _WRITERS
            and dotted(node.func.value) == name
        ):
            return True
    return False


_SCALARS = frozenset(
    {"ctx", "id", "attr", "name", "asname", "arg", "module", "level", "kind", "type_comment"}
    | {"conversion", "is_async", "simple", "tag"}
)
"""Fields that never hold a node (names, numbers, contexts), whatever the node type."""
_FIELDS: dict[type, tuple[str, ...]] = {}


def nodes(root: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``root`` (itself included) but the contexts of names (``Load``,
    ``Store``): the nodes of ``ast.walk`` in another order (depth first: a parent before its
    children), faster."""
    stack = [root]
    pop, push, extend = stack.pop, stack.append, stack.extend
    fields_of, scalars, node_type = _FIELDS.get, _SCALARS, ast.AST
    while stack:
        node = pop()
        yield node
        kind = type(node)
        fields = fields_of(kind)
        if fields is None:
            fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in scalars)
        for field in fields:  # push_children, inlined: this loop runs for every node
            value = getattr(node, field, None)
            if isinstance(value, list):
                extend(item for item in value if isinstance(item, node_type))
            elif isinstance(value, node_type):
                push(value)


def push_children(node: ast.AST, stack: list[ast.AST]) -> None:
    """Push the child nodes of ``node`` but contexts (``Load``, ``Store``) on ``stack``."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _SCALARS)
    for field in fields:
        value = getattr(node, field, None)
        if isinstance(value, list):
            stack.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            stack.append(value)


def type_strings(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """``type`` entries of config dicts: ``dict(type='BN')``, ``{'type': 'BN'}`` (line
    relative to ``tree``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "type" and _is_text(keyword.value):
                    yield keyword.value.value, keyword.value.lineno  # type: ignore[attr-defined]  # _is_text checked it
        elif isinstance(node, ast.Dict):
            for dict_key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(dict_key, ast.Constant)
                    and dict_key.value == "type"
                    and _is_text(value)
                ):
                    yield value.value, value.lineno  # type: ignore[attr-defined]  # _is_text checked it


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(node.value)
