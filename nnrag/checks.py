"""Static checks of a block file: parse, compile, closed, header (no torch, no import of it).

Finding codes are stable; tools and users may filter on them:

=======  ================  =======  ===========================================================
code     category          stage    meaning
=======  ================  =======  ===========================================================
NNR001   syntax            parse    the file does not parse (``ast.parse``)
NNR002   syntax            compile  the file parses but does not compile (``compile``/symtable)
NNR010   syntax            closed   the provenance header is missing
NNR011   syntax            closed   the provenance header is malformed (one finding per issue)
NNR012   syntax            closed   ``--pristine``: the body no longer matches the header digest
NNR101   unresolved-name   closed   a free name is bound nowhere (not module level, not builtin)
NNR102   unresolved-name   closed   a name is read at import time before any statement binds it
                                    (or after a module-level ``del``)
NNR103   unresolved-name   closed   ``from m import *``: the names it provides are unknowable
                                    statically; the message lists the names that depend on it
NNR104   unresolved-name   closed   an ``__all__`` entry names nothing defined in the file
NNR105   unresolved-name   closed   a name bound only under ``if TYPE_CHECKING:`` is used at run
                                    time
NNR201   source-import     closed   a relative import (a block must be standalone)
NNR202   source-import     closed   an import of one of the block's source packages
NNR203   missing-external  closed   an import that is neither stdlib, nor installed, nor
                                    declared in a ``requires:`` header line
NNR301   (its category)    import   ``nnrag check --import``: the sandboxed import failed
=======  ================  =======  ===========================================================

Scoping is the compiler's own (:mod:`symtable`): class scopes do not leak into methods or
comprehensions, ``global``/``nonlocal`` and comprehension scopes are exact. Function bodies
are checked against the module's final namespace (after top-level ``del``), module-level
code against what earlier top-level statements bound. Annotations that are never evaluated
(``from __future__ import annotations``, annotations of local variables) are ignored.
Imports under ``if TYPE_CHECKING:`` never run and are not checked. A third-party import
that is optional may be missing: guarded by ``try: ... except ImportError``, or lazy (inside
a function body, e.g. ``import jax`` in a weight-conversion helper); relative and
source-package imports are findings wherever they are. Installed means
``importlib.util.find_spec`` finds the top-level module (nothing is imported); declared means
a ``requires:`` line names the distribution (import name and distribution name compared
normalized, plus a few well-known aliases such as ``PIL`` -> ``pillow``).
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import re
import symtable
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nnrag.header import body_digest, header_issues, parse_header, split_header
from nnrag.model import Category, Finding, Stage

__all__ = [
    "CODES",
    "check_code",
    "check_file",
    "declared_imports",
    "definition_digests",
    "import_findings",
    "is_installed",
    "pristine_findings",
]

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
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})

# Import names whose distribution is named differently (declared via `requires:` lines).
_ALIASES: dict[str, tuple[str, ...]] = {
    "PIL": ("pillow",),
    "yaml": ("pyyaml",),
    "cv2": ("opencv-python", "opencv-python-headless", "opencv-contrib-python"),
    "sklearn": ("scikit-learn",),
    "skimage": ("scikit-image",),
    "google": ("protobuf",),
    "attr": ("attrs",),
    "dateutil": ("python-dateutil",),
    "torch_geometric": ("torch-geometric",),
}

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


CODES: dict[str, tuple[Category, Stage]] = {
    "NNR001": ("syntax", "parse"),
    "NNR002": ("syntax", "compile"),
    "NNR010": ("syntax", "closed"),
    "NNR011": ("syntax", "closed"),
    "NNR012": ("syntax", "closed"),
    "NNR101": ("unresolved-name", "closed"),
    "NNR102": ("unresolved-name", "closed"),
    "NNR103": ("unresolved-name", "closed"),
    "NNR104": ("unresolved-name", "closed"),
    "NNR105": ("unresolved-name", "closed"),
    "NNR201": ("source-import", "closed"),
    "NNR202": ("source-import", "closed"),
    "NNR203": ("missing-external", "closed"),
}
"""Category and stage of every static finding code."""


def _finding(code: str, message: str, line: int = 0, col: int = 0) -> Finding:
    category, stage = CODES[code]
    return Finding(code=code, category=category, stage=stage, message=message, line=line, col=col)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_imports(requires: Iterable[str]) -> frozenset[str]:
    """Normalized distribution names of PEP 508 ``requires`` strings."""
    names = set()
    for requirement in requires:
        match = _REQUIREMENT_NAME.match(requirement)
        if match:
            names.add(_normalize(match.group(1)))
    return frozenset(names)


def is_installed(top: str) -> bool:
    """Whether a top-level module can be found, without importing it."""
    if top in sys.modules:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _is_declared(top: str, declared: frozenset[str]) -> bool:
    candidates = (_normalize(top), *(_normalize(alias) for alias in _ALIASES.get(top, ())))
    return any(candidate in declared for candidate in candidates)


# --------------------------------------------------------------------------- entry point


def check_code(
    code: str, *, filename: str, source_packages: frozenset[str] | None = None
) -> tuple[Finding, ...]:
    """Every static finding on one block file's text, sorted by position.

    ``source_packages`` defaults to the header's ``source-packages:`` line. Never imports
    the code or anything it imports.
    """
    try:
        tree = ast.parse(code, filename=filename)
    except SyntaxError as error:
        return (_syntax_finding("NNR001", error),)
    except ValueError as error:  # source code string cannot contain null bytes
        return (_finding("NNR001", f"does not parse: {error}", 1, 1),)
    try:
        compile(tree, filename, "exec", dont_inherit=True)
        table = symtable.symtable(code, filename, "exec")
    except SyntaxError as error:
        return (_syntax_finding("NNR002", error),)

    findings: list[Finding] = []
    findings += [
        _finding(
            "NNR010" if issue.line == 1 and "missing" in issue.message else "NNR011",
            issue.message,
            issue.line,
            1,
        )
        for issue in header_issues(code)
    ]
    header = parse_header(code)
    if source_packages is None:
        source_packages = frozenset(header.source_packages) if header else frozenset()
    declared = declared_imports(header.requires if header else ())
    findings += _check_imports(tree, source_packages=source_packages, declared=declared)
    findings += _NameChecker(tree, table).run()
    return tuple(sorted(findings, key=_position))


def check_file(
    path: Path, *, pristine: bool = False, definitions: Mapping[str, str] | None = None
) -> tuple[Finding, ...]:
    """:func:`check_code` on a file; with ``pristine``, also the body digest check.

    ``definitions`` (from the vendoring manifest) lets the digest check name what changed.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return (_finding("NNR001", f"not UTF-8 text: {error.reason} at byte {error.start}", 1, 1),)
    findings = check_code(text, filename=str(path))
    if pristine:
        edited = pristine_findings(text, definitions=definitions)
        findings = tuple(sorted((*findings, *edited), key=_position))
    return findings


def definition_digests(body: str) -> dict[str, str]:
    """``name -> sha256`` of each top-level definition's source text (def, class, assignment).

    Recorded at vendoring time so that a hand edit can be reported by definition.
    """
    return {name: digest for name, (digest, _, _) in _definition_spans(body).items()}


def _definition_spans(code: str) -> dict[str, tuple[str, int, int]]:
    """``name -> (digest, first line, last line)`` of the top-level definitions of ``code``."""
    import hashlib

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    lines = code.splitlines(keepends=True)
    spans: dict[str, tuple[str, int, int]] = {}
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            continue
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = node.end_lineno or node.lineno
        text = "".join(lines[first - 1 : last])
        digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        for name in names:
            spans[name] = (digest, first, last)
    return spans


def import_findings(path: Path, *, timeout_s: float = 60.0) -> tuple[Finding, ...]:
    """NNR301 when importing the block in the sandbox fails (needs torch; lazy)."""
    from nnrag.validate import validate_file

    text = path.read_text(encoding="utf-8")
    header = parse_header(text)
    if header is None:
        return ()  # the header findings already say what is wrong
    result = validate_file(
        path,
        block_id=header.block_id,
        class_name=header.block_id.rsplit(":", 1)[-1],
        depth="import",
        timeout_s=timeout_s,
        source_packages=frozenset(header.source_packages),
    )
    if result.passed:
        return ()
    category: Category = result.category or "internal-error"
    stage: Stage = result.failed_stage or "import"
    message = f"{stage} failed [{category}]: {result.message.strip() or 'no message'}"
    return (Finding(code="NNR301", category=category, stage=stage, message=message, line=1, col=1),)


def pristine_findings(
    text: str, *, definitions: Mapping[str, str] | None = None
) -> tuple[Finding, ...]:
    """NNR012 when the body no longer matches the digest in its header (a hand edit).

    With the ``definitions`` recorded at vendoring (:func:`definition_digests`), the finding
    names the changed, added and removed definitions and sits on the first changed one.
    """
    header = parse_header(text)
    if header is None:
        return ()  # the header findings already say what is wrong
    header_text, body = split_header(text)
    actual = body_digest(body)
    if actual == header.digest:
        return ()
    line = next((n for n, t in enumerate(text.splitlines(), 1) if t.startswith("# digest:")), 1)
    message = (
        f"body edited since extraction (header digest {header.digest[:15]}..., "
        f"body now {actual[:15]}...)"
    )
    if not definitions:
        message += "; only the digest is recorded: `git diff` shows the changed lines"
        return (_finding("NNR012", message, line, 1),)
    offset = len(header_text.splitlines()) + 1  # the header and its blank line
    spans = _definition_spans(body)
    changed = sorted(
        (first + offset, last + offset, name)
        for name, (digest, first, last) in spans.items()
        if name in definitions and definitions[name] != digest
    )
    added = sorted(
        (first + offset, name) for name, (_, first, _) in spans.items() if name not in definitions
    )
    removed = sorted(set(definitions) - set(spans))
    parts = [f"{name} (lines {first}-{last})" for first, last, name in changed]
    parts += [f"added {name} (line {first})" for first, name in added]
    parts += [f"removed {name}" for name in removed]
    if parts:
        message += ": changed " + ", ".join(parts)
        line = min([first for first, _, _ in changed] + [first for first, _ in added] or [line])
    else:
        message += ": no definition changed (comments, blank lines or imports did)"
    return (_finding("NNR012", message, line, 1),)


def _position(finding: Finding) -> tuple[int, int, str, str]:
    return finding.line, finding.col, finding.code, finding.message


def _syntax_finding(code: str, error: SyntaxError) -> Finding:
    verb = "does not parse" if code == "NNR001" else "does not compile"
    return _finding(code, f"{verb}: {error.msg}", error.lineno or 1, max(error.offset or 1, 1))


# --------------------------------------------------------------------------- imports


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _guards_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        kinds = handler.type
        if kinds is None:
            return True
        names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
        for name in names:
            if isinstance(name, ast.Name) and name.id in _IMPORT_ERRORS:
                return True
            if isinstance(name, ast.Attribute) and name.attr in _IMPORT_ERRORS:
                return True
    return False


def _imports(
    statements: Iterable[ast.AST], optional: bool = False
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import that can run, with whether it is optional.

    Optional: guarded by ``except ImportError``, or lazy (inside a function body, run only
    when that function is called). Imports are statements, so only statement lists are
    walked, never expressions.
    """
    for node in statements:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, optional
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(node.orelse, optional)
        elif isinstance(node, _TRY_NODES):
            yield from _imports(node.body, optional or _guards_import_error(node))
            yield from _imports([*node.handlers, *node.orelse, *node.finalbody], optional)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _imports(node.body, True)
        else:
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(node, name, None)
                if isinstance(block, list):
                    yield from _imports(block, optional)


def _check_imports(
    tree: ast.Module, *, source_packages: frozenset[str], declared: frozenset[str]
) -> list[Finding]:
    findings: list[Finding] = []
    stdlib = sys.stdlib_module_names
    for node, optional in _imports(tree.body):
        line, col = node.lineno, node.col_offset + 1
        if isinstance(node, ast.ImportFrom):
            if node.level:
                written = "." * node.level + (node.module or "")
                findings.append(
                    _finding(
                        "NNR201",
                        f"relative import 'from {written} import ...': a vendored block must be "
                        "standalone; re-extract it or inline the definitions it needs",
                        line,
                        col,
                    )
                )
                continue
            modules = [node.module or ""]
        else:
            modules = [alias.name for alias in node.names]
        for module in modules:
            top = module.split(".", 1)[0]
            if top in source_packages:
                findings.append(
                    _finding(
                        "NNR202",
                        f"imports {module!r} from the block's source package {top!r}; a closed "
                        "block never imports its source (re-extract it to inline the definitions)",
                        line,
                        col,
                    )
                )
            elif top in stdlib or top == "__future__" or optional:
                continue
            elif not (_is_declared(top, declared) or is_installed(top)):
                findings.append(
                    _finding(
                        "NNR203",
                        f"imports {module!r}, which is not in the standard library, not installed "
                        "and not declared in a '# requires:' header line",
                        line,
                        col,
                    )
                )
    return findings


# --------------------------------------------------------------------------- names


_COMPREHENSION_SCOPES: dict[type[ast.expr], str] = {
    ast.ListComp: "listcomp",
    ast.SetComp: "setcomp",
    ast.DictComp: "dictcomp",
    ast.GeneratorExp: "genexpr",
}
_TRY_NODES = (ast.Try, getattr(ast, "TryStar", ast.Try))
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
    findings: list[Finding] = field(default_factory=list)
    future_annotations: bool = False
    runtime: set[str] = field(default_factory=set)
    """Module-level names bound by the statements executed so far (load time)."""
    final: set[str] = field(default_factory=set)
    """Module-level names bound once the module has run (what function bodies see)."""
    type_checking_only: set[str] = field(default_factory=set)
    ever_bound: set[str] = field(default_factory=set)
    class_locals: set[str] = field(default_factory=set)
    """Names bound in some class body (for a hint when a method reads one as a global)."""
    """Module-level names bound by any top-level statement (some may be deleted later)."""
    star_modules: list[tuple[str, int, int]] = field(default_factory=list)
    star_dependents: list[str] = field(default_factory=list)
    _used: dict[int, set[int]] = field(default_factory=dict)
    _children: dict[int, list[symtable.SymbolTable]] = field(default_factory=dict)
    _inlined: list[tuple[set[str], bool]] = field(default_factory=list)
    """Target names of the inlined comprehensions being walked, and whether in a class body."""

    def run(self) -> list[Finding]:
        self.future_annotations = any(
            isinstance(s, ast.ImportFrom)
            and s.module == "__future__"
            and any(a.name == "annotations" for a in s.names)
            for s in self.tree.body
        )
        self._module_namespace()
        self.final |= self._call_time_globals(self.table)
        for statement in self.tree.body:
            bound, deleted = self._statement_bindings(statement)
            self._walk(statement, self.table, call_time=False, extra=bound)
            self.runtime |= bound
            self.runtime -= deleted
        self._check_all()
        if self.star_modules and self.star_dependents:
            names = ", ".join(sorted(set(self.star_dependents)))
            for module, line, col in self.star_modules:
                self.findings.append(
                    _finding(
                        "NNR103",
                        f"'from {module} import *' hides where names come from ({names} resolve "
                        "to nothing else); import them explicitly",
                        line,
                        col,
                    )
                )
        return self.findings

    # -- namespace -------------------------------------------------------------------------

    def _statement_bindings(self, statement: ast.stmt) -> tuple[set[str], set[str]]:
        if isinstance(statement, ast.If) and _is_type_checking(statement.test):
            bound: set[str] = set()
            for child in statement.orelse:
                bound |= _bound_names(child)[0]
            return bound, set()
        return _bound_names(statement)

    def _module_namespace(self) -> None:
        checking: set[str] = set()
        for statement in self.tree.body:
            if isinstance(statement, ast.If) and _is_type_checking(statement.test):
                for child in statement.body:
                    checking |= _bound_names(child)[0]
            bound, deleted = self._statement_bindings(statement)
            self.final |= bound
            self.final -= deleted
            self.ever_bound |= bound
            if isinstance(statement, ast.ImportFrom) and any(
                a.name == "*" for a in statement.names
            ):
                written = "." * statement.level + (statement.module or "")
                self.star_modules.append((written, statement.lineno, statement.col_offset + 1))
        self.type_checking_only = checking - self.final

    def _call_time_globals(self, table: symtable.SymbolTable) -> set[str]:
        names: set[str] = set()
        if table.get_type() == "class":
            self.class_locals |= {s.get_name() for s in table.get_symbols() if s.is_assigned()}
        for child in table.get_children():
            for symbol in child.get_symbols():
                if symbol.is_declared_global() and symbol.is_assigned():
                    names.add(symbol.get_name())
            names |= self._call_time_globals(child)
        return names

    # -- walk --------------------------------------------------------------------------------

    def _child_table(
        self, table: symtable.SymbolTable, node: ast.AST
    ) -> symtable.SymbolTable | None:
        key = _scope_key(node)
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
            if inner is None:
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
            and _is_type_checking(node.test)
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
            symbol = table.lookup(name) if name in table.get_identifiers() else None
            if symbol is not None and (symbol.is_free() or name in _CLASS_DUNDERS):
                return  # from an enclosing function
        elif kind != "module":
            try:
                symbol = table.lookup(name)
            except KeyError:  # a scope symtable does not report (newer Pythons): be lenient
                return
            if not symbol.is_global():
                return  # local, free or cell: bound in a function scope the compiler found
            if kind == "class" and name in _CLASS_DUNDERS:
                return
        if name in _BUILTINS or name in _MODULE_DUNDERS:
            return
        namespace = self.final if call_time else self.runtime | extra
        if name in namespace:
            return
        line, col = node.lineno, node.col_offset + 1
        if name in self.type_checking_only:
            code = "NNR105"
            message = (
                f"{name!r} is imported only under 'if TYPE_CHECKING:' but used at run time; "
                "import it unconditionally"
            )
        elif call_time and name in self.ever_bound:
            code = "NNR102"
            message = f"{name!r} is deleted at module level ('del') before functions can use it"
        elif name in self.final or name in self.ever_bound:
            code = "NNR102"
            message = (
                f"{name!r} is used at import time before it is defined (or after it is "
                "deleted); move its definition above this line"
            )
        elif self.star_modules:
            self.star_dependents.append(name)
            return
        else:
            code = "NNR101"
            message = (
                f"undefined name {name!r}: not defined in the block, not imported, not a builtin"
            )
            if name in self.class_locals:
                message += (
                    " (class attributes are not visible in methods or comprehensions; "
                    "use self.NAME or ClassName.NAME)".replace("NAME", name)
                )
        self.findings.append(_finding(code, message, line, col))

    # -- __all__ -----------------------------------------------------------------------------

    def _check_all(self) -> None:
        if "__getattr__" in self.final:
            return  # a module __getattr__ (PEP 562) may provide any exported name lazily
        for statement in self.tree.body:
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
                self.findings.append(
                    _finding(
                        "NNR104",
                        f"__all__ lists {name!r}, which the block does not define",
                        element.lineno,
                        element.col_offset + 1,
                    )
                )
