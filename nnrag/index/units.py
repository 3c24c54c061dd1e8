"""Analysis of one Python file into a ModuleInfo: top-level units, bindings, reads and imports."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

from nnrag.diagnostics import diagnostic
from nnrag.model import ClassInfo, Diagnostic, ModuleInfo, Unit, UnitKind
from nnrag.pyscope.bindings import ModuleBindings, is_type_checking
from nnrag.pyscope.scopes import dotted
from nnrag.sources.scan import git_blob_sha1

__all__ = ["analyze_module", "module_name_for"]

_DEEP_RECURSION = 20_000
_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")

_KINDS: dict[type[ast.AST], UnitKind] = {
    ast.FunctionDef: "def",
    ast.AsyncFunctionDef: "def",
    ast.ClassDef: "class",
    ast.Assign: "assign",
    ast.AnnAssign: "assign",
    ast.AugAssign: "assign",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.If: "if",
    ast.Try: "try",
    ast.With: "with",
    ast.AsyncWith: "with",
}
_TRY_STAR: type[ast.AST] | None = getattr(ast, "TryStar", None)  # Python >= 3.11
_TYPE_ALIAS: type[ast.AST] | None = getattr(ast, "TypeAlias", None)  # Python >= 3.12
if _TRY_STAR is not None:
    _KINDS[_TRY_STAR] = "try"
if _TYPE_ALIAS is not None:
    _KINDS[_TYPE_ALIAS] = "assign"

_ABSTRACT = frozenset(
    {"abstractmethod", "abstractproperty", "abstractclassmethod", "abstractstaticmethod"}
)


def module_name_for(path: Path, root: Path) -> tuple[str, bool]:
    """Dotted module name of ``path`` and whether it is a package ``__init__.py``.

    Walks up from the file's folder while folders contain ``__init__.py`` (so
    ``src/`` layouts and nested repositories work), stopping after ``root``
    itself. A folder without ``__init__.py`` inside a regular package is a namespace
    subpackage of it, as Python imports it (fair-esm's ``esm/esmfold/v1/misc.py`` is
    ``esm.esmfold.v1.misc``). A file in a folder without ``__init__.py`` that no package
    holds is named from ``root`` as Python names it with the root on ``sys.path`` (a
    namespace package: yolov5's ``models/yolo.py`` is ``models.yolo``); where a folder on
    the way is no identifier, the file is a top-level module.
    """
    is_package = path.name == "__init__.py"
    folder = path.parent
    if (
        not is_package
        and folder != root
        and not (folder / "__init__.py").is_file()
        and not _inside_package(folder, root)
    ):
        try:
            relative = path.relative_to(root).with_suffix("").parts
        except ValueError:
            relative = ()
        if relative and all(part.isidentifier() for part in relative):
            return ".".join(relative), False
    parts: list[str] = [] if is_package else [path.stem]
    folder = path.parent
    while folder.name.isidentifier() and (
        (folder / "__init__.py").is_file() or _inside_package(folder, root)
    ):
        parts.append(folder.name)
        if folder in (root, folder.parent):
            break
        folder = folder.parent
    if not parts:
        parts.append(path.parent.name)
    return ".".join(reversed(parts)), is_package


def _inside_package(folder: Path, root: Path) -> bool:
    """Whether a regular package (at or below ``root``) holds ``folder`` through folders that
    are identifiers: then ``folder`` imports as a namespace subpackage of it."""
    if folder == root or root not in folder.parents:
        return False
    above = folder.parent
    while above.name.isidentifier():
        if (above / "__init__.py").is_file():
            return True
        if above == root:
            return False
        above = above.parent
    return False


def analyze_module(
    *, source: str, module: str, path: str, data: bytes, is_package: bool
) -> ModuleInfo | Diagnostic:
    """Index one file: its top-level units with what each binds and reads.

    ``source`` names the indexed source, ``path`` is the POSIX path relative to
    its root, ``data`` the file's bytes. A file that does not decode or parse
    becomes a :class:`Diagnostic`; this function never raises for bad input.

    Reads are dotted chains rooted at module-level names (builtins included),
    split into load-time reads (run when the module executes: module code,
    class bodies, bases, decorators, defaults, evaluated annotations) and
    call-time reads (function and lambda bodies, and annotations that are never
    evaluated: PEP 563 modules, local variables). ``import a.b.c`` is recorded
    as ``ImportBinding(name="a", module="a.b.c", attr=None)``: it binds ``a``
    and also makes ``a.b.c`` importable. A relative import that climbs above
    the top-level package keeps the surplus dots in ``module`` (``"..x"``).
    """

    decoded = _decode(data)
    if not isinstance(decoded, str):
        message, line, col = decoded
        return diagnostic("NNR402", source=source, path=path, line=line, col=col, error=message)
    try:
        tree = ast.parse(decoded, filename=path)
    except SyntaxError as error:
        line, col = error.lineno or 0, error.offset or 0
        nul = decoded.find("\0")
        if not line and nul >= 0:
            line = decoded.count("\n", 0, nul) + 1
            col = nul - (decoded.rfind("\n", 0, nul) + 1) + 1
        return diagnostic("NNR403", source=source, path=path, line=line, col=col, error=error.msg)
    except (ValueError, MemoryError, RecursionError) as error:
        return diagnostic("NNR408", source=source, path=path, error=error or type(error).__name__)
    lines = decoded.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        walker = ModuleBindings(module=module, is_package=is_package, tree=tree)
        units = _units(walker, tree, lines)
    except RecursionError:
        if sys.version_info < (3, 11):
            return diagnostic("NNR404", source=source, path=path, advice="simplify the expression")
        # Deep but valid nesting: Python-to-Python calls do not grow the C stack on 3.11+.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _DEEP_RECURSION))
        try:
            walker = ModuleBindings(module=module, is_package=is_package, tree=tree)
            units = _units(walker, tree, lines)
        except RecursionError:
            return diagnostic(
                "NNR404",
                source=source,
                path=path,
                advice="simplify the expression or split the file",
            )
        finally:
            sys.setrecursionlimit(limit)
    return ModuleInfo(
        source=source,
        module=module,
        path=path,
        sha1=git_blob_sha1(data),
        is_package=is_package,
        lines=len(lines),
        future=tuple(walker.future),
        all_names=walker.all_names(),
        star_imports=tuple(dict.fromkeys(walker.star_imports)),
        units=units,
    )


def _decode(data: bytes) -> str | tuple[str, int, int]:
    """The file's text (PEP 263 cookie or UTF-8, BOM stripped), or (message, line, col)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:  # a bad cookie, or undecodable bytes in the first two lines
        head = data.split(b"\n", 2)[:2]
        line = next((i + 1 for i, text in enumerate(head) if b"coding" in text), 0)
        encoding = "utf-8"
        if line:
            return f"cannot decode: {error.msg}", line, 1
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        start = error.start
        line = data.count(b"\n", 0, start) + 1
        col = start - (data.rfind(b"\n", 0, start) + 1) + 1
        message = f"cannot decode as {encoding}: {error.reason} (declare the file's encoding)"
        return message, line, col
    except LookupError as error:
        return f"cannot decode: {error}", 1, 1


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """Parameters as written, without the first (``self``)."""
    args = fn.args
    posonly, regular, defaults = list(args.posonlyargs), list(args.args), list(args.defaults)
    if posonly or regular:
        if len(defaults) == len(posonly) + len(regular):
            defaults = defaults[1:]
        if posonly:
            posonly = posonly[1:]
        else:
            regular = regular[1:]
    trimmed = ast.arguments(
        posonlyargs=posonly,
        args=regular,
        vararg=args.vararg,
        kwonlyargs=args.kwonlyargs,
        kw_defaults=args.kw_defaults,
        kwarg=args.kwarg,
        defaults=defaults,
    )
    return ast.unparse(trimmed)


def _class_info(node: ast.ClassDef) -> ClassInfo:
    methods: list[str] = []
    abstract: list[str] = []
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            methods.append(stmt.name)
            defs[stmt.name] = stmt
            if any(_written(d).rpartition(".")[2] in _ABSTRACT for d in stmt.decorator_list):
                abstract.append(stmt.name)
        elif isinstance(stmt, ast.Assign) and (
            isinstance(stmt.value, ast.Lambda)
            or (isinstance(stmt.value, ast.Name) and stmt.value.id in defs)
        ):
            methods.extend(t.id for t in stmt.targets if isinstance(t, ast.Name))
    metaclass = next((_written(k.value) for k in node.keywords if k.arg == "metaclass"), None)
    init, forward = defs.get("__init__"), defs.get("forward")
    return ClassInfo(
        name=node.name,
        bases=tuple(_written(b) for b in node.bases),
        metaclass=metaclass,
        methods=tuple(dict.fromkeys(methods)),
        abstract_methods=tuple(abstract),
        docstring=ast.get_docstring(node),
        init_signature=_signature(init) if init else None,
        forward_signature=_signature(forward) if forward else None,
        line=node.lineno,
    )


def _written(node: ast.expr) -> str:
    """The dotted name a base or decorator is written as (``X[...]`` as ``X``), else ``""``."""
    return dotted(node.value if isinstance(node, ast.Subscript) else node) or ""


def _units(walker: ModuleBindings, tree: ast.Module, lines: list[str]) -> tuple[Unit, ...]:
    """One unit per top-level statement; statements sharing a line form one unit."""
    groups: list[list[int]] = []
    last_end = 0
    for position, stmt in enumerate(tree.body):
        if groups and stmt.lineno <= last_end:
            groups[-1].append(position)
        else:
            groups.append([position])
        last_end = max(last_end, stmt.end_lineno or stmt.lineno)
    units: list[Unit] = []
    previous_end = 0
    for index, group in enumerate(groups):
        statements = [tree.body[position] for position in group]
        first = statements[0]
        facts = walker.unit(group[0], group[-1])
        # ``if TYPE_CHECKING: ... else: ...`` runs its ``else`` branch: a runtime unit
        type_checking = (
            isinstance(first, ast.If) and is_type_checking(first.test) and not first.orelse
        )
        start = _start_line(first, lines, previous_end)
        end = max(s.end_lineno or s.lineno for s in statements)
        previous_end = end
        units.append(
            Unit(
                index=index,
                kind=_KINDS.get(type(first), "other"),
                start_line=start,
                end_line=end,
                binds=tuple(sorted(facts.binds)),
                load_reads=tuple(sorted(facts.load)),
                call_reads=tuple(sorted(facts.calls)),
                annotation_reads=facts.annotation_only(),
                imports=tuple(facts.imports),
                classes=tuple(_class_info(node) for node in facts.classes),
                type_checking=type_checking,
                assigns=tuple(sorted(facts.assigns)),
                rebinds=tuple(sorted(facts.rebinds)),
                binds_computed=facts.computed,
                local_imports=tuple(facts.local_imports),
                local_reads=tuple(sorted(facts.local_reads)),
            )
        )
    return tuple(units)


def _start_line(node: ast.stmt, lines: list[str], previous_end: int) -> int:
    """First line of a unit: its decorators and the comment lines directly above it."""
    start = node.lineno
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        start = min(start, *(d.lineno for d in decorators))
    while start - 1 > previous_end:
        text = lines[start - 2] if start - 2 < len(lines) else ""
        if not text.startswith("#") or text.startswith("#!") or _is_cookie(start - 1, text):
            break
        start -= 1
    return start


def _is_cookie(line: int, text: str) -> bool:
    """A PEP 263 encoding declaration (it must not travel with the unit)."""
    return line <= 2 and _COOKIE.match(text) is not None
