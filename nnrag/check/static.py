"""Static checks of a block file: parse, compile, closed, header (no torch, no import of it).

Its findings are :class:`~nnrag.model.Diagnostic` objects with the ``check`` codes of
:data:`nnrag.diagnostics.CODES` (NNR001-NNR301; the table with each code's category, stage
and meaning is in :mod:`nnrag.diagnostics`); :func:`nnrag.report.format_diagnostic` prints
them as ``path:line:col: CODE message``.

Scoping (:mod:`nnrag.pyscope.scoping`) is the compiler's own (:mod:`symtable`): class scopes do not
leak into methods or comprehensions, ``global``/``nonlocal`` and comprehension scopes are
exact. Function bodies
are checked against the module's final namespace (after top-level ``del``), module-level
code against what earlier top-level statements bound. Annotations that are never evaluated
(``from __future__ import annotations``, annotations of local variables) are ignored.
Imports under ``if TYPE_CHECKING:`` never run and are not checked. A third-party import
that is optional may be missing: guarded by ``try: ... except ImportError``, conditional (in
an ``if`` branch that may not run: ``if torch.__version__ == 'parrots': import parrots``), or
lazy (inside a function body, e.g. ``import jax`` in a weight-conversion helper); relative and
source-package imports are findings wherever they are. Installed means
``importlib.util.find_spec`` finds the top-level module (nothing is imported); declared means
a ``requires:`` line names the distribution (import name and distribution name compared
normalized, plus a few well-known aliases such as ``PIL`` -> ``pillow``).

:class:`nnrag.check.cache.CheckCache` keeps the findings of a file's content for repeated
runs (the pre-commit hook): keyed by the file's bytes, the checks' code and the Python
version, and re-checking on every hit whether the third-party modules looked up are still
(not) installed. :mod:`nnrag.check.files` checks many files (``check_file``, ``check_files``).
Within a run, a top-level statement shared by several files is parsed and compiled once
(:mod:`nnrag.check.pieces`), and the name pass walks only the function bodies whose code
(the compiler's names) may read a name the module does not bind.
"""

from __future__ import annotations

import ast
import gc
import importlib.util
import re
import symtable
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from nnrag.blockfile.header import body_digest, header_issues, parse_header, split_header
from nnrag.check.pieces import (
    Compiled,
    compile_units,
    function_reads,
    parse_units,
    statement_units,
)
from nnrag.diagnostics import CODES as _ALL_CODES
from nnrag.diagnostics import diagnostic
from nnrag.model import Category, Diagnostic, Stage, ValidationResult
from nnrag.pyscope.bindings import is_type_checking
from nnrag.pyscope.scoping import unresolved_names

__all__ = [
    "CHECK_MODULES",
    "CODES",
    "Importer",
    "check_code",
    "check_text",
    "declared_imports",
    "definition_digests",
    "import_findings",
    "is_installed",
    "position",
    "pristine_findings",
]

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


CODES: dict[str, tuple[Category | None, Stage | None]] = {
    code: (entry.category, entry.stage)
    for code, entry in _ALL_CODES.items()
    if entry.origin == "check"
}
"""Category and stage of every static finding code (``None``: NNR301's are those of what
failed)."""


CHECK_MODULES = ("check", "pyscope", "blockfile/header.py", "model.py", "diagnostics.py")
"""Code whose code decides the static findings (the ``CheckCache`` key)."""


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(code: str, requires: Iterable[str]) -> list[str]:
    """``# requires:`` lines and the PEP 723 ``# /// script`` dependencies, together (a file
    whose script block does not parse has the header finding NNR011 already)."""
    from nnrag.blockfile.requirements import script_dependencies

    try:
        script = script_dependencies(code) or ()
    except ValueError:
        script = ()
    return [*requires, *script]


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
) -> tuple[Diagnostic, ...]:
    """Every static finding on one block file's text, sorted by position.

    ``source_packages`` defaults to the header's ``source-packages:`` line. Never imports
    the code or anything it imports.
    """
    return check_text(code, filename=filename, source_packages=source_packages)[0]


def check_text(
    code: str,
    *,
    filename: str,
    source_packages: frozenset[str] | None,
    compiled: Compiled | None = None,
    timings: dict[str, float] | None = None,
) -> tuple[tuple[Diagnostic, ...], dict[str, bool]]:
    """:func:`check_code`, plus whether each third-party module it looked up is installed.

    ``compiled``: statements parsed and compiled by earlier calls (shared by the files of one
    run; the findings are the same with or without it). ``timings``: filled with the seconds
    spent parsing (``parse``), compiling (``compile``) and on the other checks (``closed``).
    The cyclic garbage collector is paused meanwhile: a file's ast is thousands of objects
    without cycles (freed by reference counting) that it would traverse repeatedly.
    """
    paused = gc.isenabled()
    gc.disable()
    clock = _Clock(timings)
    try:
        return _check_all(
            code,
            filename=filename,
            source_packages=source_packages,
            compiled=compiled,
            clock=clock,
        )
    finally:
        clock.lap("closed")
        if paused:
            gc.enable()


class _Clock:
    """Adds the seconds since its last lap to a stage's entry of ``timings`` (if any)."""

    def __init__(self, timings: dict[str, float] | None) -> None:
        self.timings = timings
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        if self.timings is not None:
            now = time.perf_counter()
            self.timings[stage] = self.timings.get(stage, 0.0) + now - self.last
            self.last = now


def _check_all(
    code: str,
    *,
    filename: str,
    source_packages: frozenset[str] | None,
    compiled: Compiled | None,
    clock: _Clock,
) -> tuple[tuple[Diagnostic, ...], dict[str, bool]]:
    probes: dict[str, bool] = {}
    compiled = Compiled() if compiled is None else compiled
    units = parse_units(code, filename, compiled)
    clock.lap("parse")
    parts = None
    compile_error: SyntaxError | None = None
    if units is not None:
        try:  # None: the file was compiled whole (fine), the error: its compile error
            parts = compile_units(code, units, filename, compiled)
        except SyntaxError as error:
            compile_error = error
        clock.lap("compile")
    reads = None if parts is None or units is None else function_reads(units, parts)
    deltas = None if units is None else [first - 1 for first, _, nodes in units if nodes]
    if parts is None:  # the whole file, as one
        deltas = None
        try:
            tree = ast.parse(code, filename=filename)
        except SyntaxError as error:
            return (_syntax_finding("NNR001", error, filename),), probes
        except ValueError as error:  # source code string cannot contain null bytes
            return (diagnostic("NNR001", path=filename, line=1, col=1, error=error),), probes
        finally:
            clock.lap("parse")
        try:
            if compile_error is not None:
                raise compile_error
            tree_units = None if units is not None else statement_units(code, tree)
            if tree_units is not None:
                parts = compile_units(code, tree_units, filename, compiled)
            elif units is None:
                compile(code, filename, "exec", dont_inherit=True)
            if not parts:  # errors only the symbol table finds (e.g. a bad nonlocal)
                symtable.symtable(code, filename, "exec")
        except SyntaxError as error:
            return (_syntax_finding("NNR002", error, filename),), probes
        finally:
            clock.lap("compile")
    else:
        tree = ast.Module(body=[n for _, _, nodes in units or () for n in nodes], type_ignores=[])

    findings: list[Diagnostic] = []
    findings += header_issues(code)
    header = parse_header(code)
    if source_packages is None:
        source_packages = frozenset(header.source_packages) if header else frozenset()
    declared = declared_imports(_declared(code, header.requires if header else ()))
    findings += _check_imports(
        tree, source_packages=source_packages, declared=declared, probes=probes, deltas=deltas
    )
    findings += unresolved_names(tree, deltas=deltas, reads=reads)
    located = (replace(f, path=filename) if f.path != filename else f for f in findings)
    return tuple(sorted(located, key=position)), probes


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


class Importer(Protocol):
    """Imports a block file in a sandbox and says how far it got (``nnrag check --import``).

    The adapter provides it (the CLI binds :func:`nnrag.validate.stages.validate_file` to one
    sandbox for the whole run), so the check itself never imports the validation.
    """

    def __call__(
        self, path: Path, *, block_id: str, class_name: str, source_packages: frozenset[str]
    ) -> ValidationResult: ...


def import_findings(path: Path, *, importer: Importer) -> tuple[Diagnostic, ...]:
    """NNR301 when ``importer`` (the sandboxed import) fails for the block file at ``path``."""
    text = path.read_text(encoding="utf-8")
    header = parse_header(text)
    if header is None:
        return ()  # the header findings already say what is wrong
    result = importer(
        path,
        block_id=header.block_id,
        class_name=header.block_id.rsplit(":", 1)[-1],
        source_packages=frozenset(header.source_packages),
    )
    if result.passed:
        return ()
    return (
        diagnostic(
            "NNR301",
            path=str(path),
            line=1,
            col=1,
            category=result.category or "internal-error",
            stage=result.failed_stage or "import",
            detail=result.message.strip() or "no message",
        ),
    )


def pristine_findings(
    text: str, *, definitions: Mapping[str, str] | None = None
) -> tuple[Diagnostic, ...]:
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
    recorded, now = header.digest[:15], actual[:15]
    if not definitions:
        changes = "; only the digest is recorded: `git diff` shows the changed lines"
        return (
            diagnostic("NNR012", line=line, col=1, changes=changes, recorded=recorded, actual=now),
        )
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
        changes = ": changed " + ", ".join(parts)
        line = min([first for first, _, _ in changed] + [first for first, _ in added] or [line])
    else:
        changes = ": no definition changed (comments, blank lines or imports did)"
    return (diagnostic("NNR012", line=line, col=1, changes=changes, recorded=recorded, actual=now),)


def position(finding: Diagnostic) -> tuple[int, int, str, str]:
    return finding.line, finding.col, finding.code, finding.message


def _syntax_finding(code: str, error: SyntaxError, filename: str) -> Diagnostic:
    line, col = error.lineno or 1, max(error.offset or 1, 1)
    return diagnostic(code, path=filename, line=line, col=col, error=error.msg)


# --------------------------------------------------------------------------- imports

_TRY_NODES = (ast.Try, getattr(ast, "TryStar", ast.Try))


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

    Optional: guarded by ``except ImportError``, conditional (in a branch of ``if`` or
    ``match``, which may not run), or lazy (inside a function body, run only when that
    function is called). Imports are statements, so only statement lists are
    walked, never expressions.
    """
    for node in statements:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, optional
        elif isinstance(node, ast.If) and is_type_checking(node.test):
            yield from _imports(node.orelse, optional)
        elif isinstance(node, ast.If | ast.Match):
            # a branch may never run (``if torch.__version__ == 'parrots': import parrots``):
            # conditional like a guarded one; if it runs and fails, the import stage says so
            branches: list[list[ast.stmt]] = (
                [node.body, node.orelse]
                if isinstance(node, ast.If)
                else [case.body for case in node.cases]
            )
            for branch in branches:
                yield from _imports(branch, True)
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
    tree: ast.Module,
    *,
    source_packages: frozenset[str],
    declared: frozenset[str],
    probes: dict[str, bool],
    deltas: Sequence[int] | None = None,
) -> list[Diagnostic]:
    findings: list[Diagnostic] = []
    stdlib = sys.stdlib_module_names
    for index, statement in enumerate(tree.body):
        findings += _statement_imports(
            statement,
            deltas[index] if deltas else 0,
            source_packages=source_packages,
            declared=declared,
            probes=probes,
            stdlib=stdlib,
        )
    return findings


def _statement_imports(
    statement: ast.stmt,
    delta: int,
    *,
    source_packages: frozenset[str],
    declared: frozenset[str],
    probes: dict[str, bool],
    stdlib: frozenset[str],
) -> list[Diagnostic]:
    """Import findings of one top-level statement whose lines are ``delta`` behind the file."""
    findings: list[Diagnostic] = []
    for node, optional in _imports([statement]):
        line, col = node.lineno + delta, node.col_offset + 1
        if isinstance(node, ast.ImportFrom):
            if node.level:
                written = "." * node.level + (node.module or "")
                findings.append(diagnostic("NNR201", line=line, col=col, written=written))
                continue
            modules = [node.module or ""]
        else:
            modules = [alias.name for alias in node.names]
        for module in modules:
            top = module.split(".", 1)[0]
            if top in source_packages:
                findings.append(diagnostic("NNR202", line=line, col=col, module=module, top=top))
            elif top in stdlib or top == "__future__" or optional:
                continue
            elif not (_is_declared(top, declared) or _installed(top, probes)):
                findings.append(diagnostic("NNR203", line=line, col=col, module=module))
    return findings


def _installed(top: str, probes: dict[str, bool]) -> bool:
    if top not in probes:
        probes[top] = is_installed(top)
    return probes[top]
