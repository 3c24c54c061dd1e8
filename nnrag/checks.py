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

Scoping (:mod:`nnrag.scoping`) is the compiler's own (:mod:`symtable`): class scopes do not
leak into methods or comprehensions, ``global``/``nonlocal`` and comprehension scopes are
exact. Function bodies
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

:class:`CheckCache` keeps the findings of a file's content for repeated runs (the pre-commit
hook): keyed by the file's bytes, this module's code and the Python version, and re-checking
on every hit whether the third-party modules looked up are still (not) installed. Within a
run, a top-level statement shared by several files is parsed, compiled and its scopes
analyzed once (see ``_parse_units`` and ``_compile``), and function bodies are walked only
when the symbol tables leave a name unresolved.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import gc
import hashlib
import importlib.util
import json
import os
import re
import symtable
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nnrag.bindings import is_type_checking
from nnrag.header import body_digest, header_issues, parse_header, split_header
from nnrag.model import Category, Finding, Stage
from nnrag.scoping import unresolved_names

__all__ = [
    "CHECK_MODULES",
    "CODES",
    "CheckCache",
    "check_code",
    "check_file",
    "check_files",
    "declared_imports",
    "definition_digests",
    "import_findings",
    "is_installed",
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


CHECK_MODULES = ("checks", "scoping", "bindings", "header", "model")
"""Modules whose code decides the static findings (the :class:`CheckCache` key)."""


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
    return _check(code, filename=filename, source_packages=source_packages)[0]


@dataclass(slots=True)
class Compiled:
    """What a run parsed and compiled cleanly so far, by the text of a top-level statement."""

    tables: dict[tuple[int, str], symtable.SymbolTable] = field(default_factory=dict)
    """``(compiler flags, text) -> symbol table`` of the statements compiled."""
    trees: dict[str, list[ast.stmt]] = field(default_factory=dict)
    """``text -> ast`` of the pieces parsed (see :func:`_parse_units`)."""


def _check(
    code: str,
    *,
    filename: str,
    source_packages: frozenset[str] | None,
    compiled: Compiled | None = None,
) -> tuple[tuple[Finding, ...], dict[str, bool]]:
    """:func:`check_code`, plus whether each third-party module it looked up is installed.

    The cyclic garbage collector is paused meanwhile: a file's ast is thousands of objects
    without cycles (freed by reference counting) that it would traverse repeatedly.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _check_text(
            code, filename=filename, source_packages=source_packages, compiled=compiled
        )
    finally:
        if paused:
            gc.enable()


def _check_text(
    code: str,
    *,
    filename: str,
    source_packages: frozenset[str] | None,
    compiled: Compiled | None,
) -> tuple[tuple[Finding, ...], dict[str, bool]]:
    probes: dict[str, bool] = {}
    compiled = Compiled() if compiled is None else compiled
    units = _parse_units(code, filename, compiled)
    parts = None
    compile_error: SyntaxError | None = None
    if units is not None:
        try:  # None: the file was compiled whole (fine), the error: its compile error
            parts = _compile(code, units, filename, compiled, relative=True)
        except SyntaxError as error:
            compile_error = error
    deltas = None if units is None else [first - 1 for first, _, nodes in units if nodes]
    if parts is None:  # the whole file, as one
        deltas = None
        try:
            tree = ast.parse(code, filename=filename)
        except SyntaxError as error:
            return (_syntax_finding("NNR001", error),), probes
        except ValueError as error:  # source code string cannot contain null bytes
            return (_finding("NNR001", f"does not parse: {error}", 1, 1),), probes
        try:
            if compile_error is not None:
                raise compile_error
            tree_units = None if units is not None else _units(code, tree)
            if tree_units is not None:
                parts = _compile(code, tree_units, filename, compiled, relative=False)
            elif units is None:
                compile(code, filename, "exec", dont_inherit=True)
            table = parts[0][0] if parts else symtable.symtable(code, filename, "exec")
        except SyntaxError as error:
            return (_syntax_finding("NNR002", error),), probes
    else:
        tree = ast.Module(body=[n for _, _, nodes in units or () for n in nodes], type_ignores=[])
        table = parts[0][0] if parts else symtable.symtable(code, filename, "exec")

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
    findings += _check_imports(
        tree, source_packages=source_packages, declared=declared, probes=probes, deltas=deltas
    )
    issues = unresolved_names(tree, table, parts=parts, deltas=deltas)
    findings += [_finding(*issue) for issue in issues]
    return tuple(sorted(findings, key=_position)), probes


def check_file(
    path: Path,
    *,
    pristine: bool = False,
    definitions: Mapping[str, str] | None = None,
    cache: CheckCache | None = None,
) -> tuple[Finding, ...]:
    """:func:`check_code` on a file; with ``pristine``, also the body digest check.

    ``definitions`` (from the vendoring manifest) lets the digest check name what changed.
    ``cache`` returns the findings of content already checked (same findings, less time).
    Raises ``OSError`` if the file cannot be read.
    """
    manifest = {path: definitions} if definitions is not None else None
    (result,) = check_files([path], pristine=pristine, definitions=manifest, cache=cache)
    if isinstance(result, OSError):
        raise result
    return result


def check_files(
    paths: Sequence[Path],
    *,
    pristine: bool = False,
    definitions: Mapping[Path, Mapping[str, str]] | None = None,
    cache: CheckCache | None = None,
    workers: int = 1,
) -> list[tuple[Finding, ...] | OSError]:
    """:func:`check_file` on each path, in order (an unreadable file gives its ``OSError``).

    The files not in ``cache`` are checked in up to ``workers`` forked processes, split by
    size, if there is enough text (parsing, compiling and the symbol tables hold the GIL, so
    threads would not help). Each process compiles the statements files share on its own:
    on a busy two-core machine one process was faster (the CLI's default, ``--jobs 1``).
    """
    results: list[tuple[Finding, ...] | OSError] = []
    texts: dict[int, str] = {}
    keys: dict[int, str] = {}
    missing: dict[int, str] = {}
    for index, path in enumerate(paths):
        try:
            read = _read(path)
        except OSError as error:
            results.append(error)
            continue
        if isinstance(read, Finding):
            results.append((read,))
            continue
        data, texts[index] = read
        keys[index] = cache.key(data) if cache is not None else ""
        cached = cache.get(keys[index]) if cache is not None else None
        results.append(cached if cached is not None else ())
        if cached is None:
            missing[index] = texts[index]
    for index, (findings, probes) in _check_texts(paths, missing, workers).items():
        results[index] = findings
        if cache is not None:
            cache.put(keys[index], findings, probes)
    for index, text in texts.items():
        found = results[index]
        if pristine and not isinstance(found, OSError):
            edited = pristine_findings(text, definitions=(definitions or {}).get(paths[index]))
            results[index] = tuple(sorted((*found, *edited), key=_position))
    return results


def _read(path: Path) -> tuple[bytes, str] | Finding:
    """The bytes and text of a file (UTF-8, universal newlines, as ``read_text``), or NNR001."""
    data = path.read_bytes()
    try:
        return data, data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        try:  # the text layer's own error, whose position the finding reports
            return data, path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            message = f"not UTF-8 text: {error.reason} at byte {error.start}"
            return _finding("NNR001", message, 1, 1)


_PARALLEL_MIN_CHARS = 128 * 1024
"""Below this much text, one process checks faster than starting others (~30 ms/1,000 lines)."""

_Checked = tuple[tuple[Finding, ...], dict[str, bool]]


def _check_texts(
    paths: Sequence[Path], texts: Mapping[int, str], workers: int
) -> dict[int, _Checked]:
    """``index -> (findings, installed lookups)`` of each text, in forked processes if it pays.

    Each process parses and compiles a top-level statement found in several files once, with
    its symbol table (vendored blocks of one source share their helpers).
    """
    compiled = Compiled()

    def check(indices: list[int]) -> dict[int, _Checked]:
        return {
            i: _check(texts[i], filename=str(paths[i]), source_packages=None, compiled=compiled)
            for i in indices
        }

    jobs = sorted(texts, key=lambda index: -len(texts[index]))
    workers = min(workers, len(jobs))
    if (
        workers < 2
        or sum(map(len, texts.values())) < _PARALLEL_MIN_CHARS
        or not hasattr(os, "fork")
    ):
        return check(jobs)
    groups: list[list[int]] = [[] for _ in range(workers)]
    sizes = [0] * workers
    for index in jobs:  # largest first, to the least loaded process
        least = sizes.index(min(sizes))
        groups[least].append(index)
        sizes[least] += len(texts[index])
    children = [(_fork_check(check, group), group) for group in groups[1:]]
    results = check(groups[0])
    for (pid, pipe), group in children:
        done = _collect(pid, pipe)
        results.update(check(group) if done is None else done)  # None: the process failed
    return results


def _fork_check(
    check: Callable[[list[int]], dict[int, _Checked]], group: list[int]
) -> tuple[int, int]:
    """``check(group)`` in a forked process; (its pid, the pipe its results come on)."""
    import marshal

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        return pid, read_end
    status = 1
    try:
        os.close(read_end)
        done = {
            index: ([(f.code, f.message, f.line, f.col) for f in findings], probes)
            for index, (findings, probes) in check(group).items()
        }
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(marshal.dumps(done))
        status = 0
    finally:
        os._exit(status)  # never return into the caller's code in the child


def _collect(pid: int, pipe: int) -> dict[int, _Checked] | None:
    """The results a forked process sent, or None if it failed."""
    import marshal

    with os.fdopen(pipe, "rb") as stream:
        payload = stream.read()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    try:
        done = marshal.loads(payload)
        return {
            int(index): (tuple(_finding(*fields) for fields in found), dict(probes))
            for index, (found, probes) in done.items()
        }
    except (EOFError, ValueError, TypeError, KeyError):
        return None


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


# --------------------------------------------------------------------------- compile


Unit = tuple[int, str, list[ast.stmt]]
"""A top-level statement: its first line in the file, its text, its ast (one node, or none
for comments only)."""


def _parse_units(code: str, filename: str, compiled: Compiled) -> list[Unit] | None:
    """The file cut before each line that starts a top-level statement, each piece parsed on
    its own (once per run: ``compiled`` keeps the trees), or None: parse the file whole.

    A cut in the wrong place (inside a string, brackets or a continued line) leaves a piece
    that does not parse; any piece that fails, warns or holds two statements means None, so
    the ast, the errors and the warnings are exactly the whole file's.
    """
    if "\r" in code:  # a line break the split below would not see
        return None
    lines = code.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    starts = [1]
    decorated = False
    for number, line in enumerate(lines, 1):
        if not line or line[0] in " \t#)]}\f" or line.startswith(_CONTINUATIONS):
            continue
        if number > 1 and not decorated:
            starts.append(number)
        decorated = line.startswith("@")
    units: list[Unit] = []
    parsed = compiled.trees
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning: parse the whole file to show it
        for first, end in zip(starts, [*starts[1:], len(lines) + 1], strict=True):
            text = "\n".join(lines[first - 1 : end - 1]) + "\n"
            nodes = parsed.get(text)
            if nodes is None:
                try:
                    nodes = ast.parse(text, filename=filename).body
                except (SyntaxError, ValueError, Warning):
                    return None
                parsed[text] = nodes
            if len(nodes) > 1:
                return None
            units.append((first, text, nodes))
    return units


_CONTINUATIONS = ("else", "elif", "except", "finally")


def _units(code: str, tree: ast.Module) -> list[Unit] | None:
    """The top-level statements of a file parsed whole, or None if two share a line."""
    if "\r" in code:  # a line break the split below would not see
        return None
    lines = code.split("\n")
    units: list[Unit] = []
    last = 0
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        end = node.end_lineno or node.lineno
        if first <= last:
            return None
        units.append((first, "\n".join(lines[first - 1 : end]) + "\n", [node]))
        last = end
    return units


def _compile(
    code: str, units: list[Unit], filename: str, compiled: Compiled, *, relative: bool
) -> list[tuple[symtable.SymbolTable, int]] | None:
    """Compile ``code`` (raises its ``SyntaxError``), skipping statements compiled before;
    the symbol table of each top-level statement and its line offset (None: use the file's).

    Each top-level statement is compiled on its own, under the file's ``__future__`` flags,
    unless its text is in ``compiled``: what the compiler checks of a statement, and its
    scopes, depend only on that statement, those flags and a module-level ``global`` (such
    files are compiled whole). A statement that fails or warns on its own makes the whole
    file compile, so the error (the first the compiler finds), its position and any warning
    are exactly the file's own. ``relative``: the units' trees count lines from their text.
    """
    flags = _future_flags(units)
    if flags is None:
        compile(code, filename, "exec", dont_inherit=True)
        return None
    texts = [(first, text) for first, text, nodes in units if nodes]
    prefix = "from __future__ import annotations\n" if flags else ""
    fresh = list(dict.fromkeys(text for _, text in texts if (flags, text) not in compiled.tables))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning: compile the whole file to show it
            for text in fresh:
                compile(text, filename, "exec", flags, dont_inherit=True)
            tables = [symtable.symtable(prefix + text, filename, "exec") for text in fresh]
    except (SyntaxError, ValueError, Warning):
        compile(code, filename, "exec", dont_inherit=True)
        return None
    compiled.tables.update(
        ((flags, text), table) for text, table in zip(fresh, tables, strict=True)
    )
    shift = 1 if prefix else 0  # the table's lines count the prefix
    if relative:
        return [(compiled.tables[flags, text], -shift) for _, text in texts]
    return [(compiled.tables[flags, text], first - 1 - shift) for first, text in texts]


def _future_flags(units: list[Unit]) -> int | None:
    """The compiler flags of the file's ``__future__`` imports, None if it must be compiled
    whole (a late or other feature, a module-level ``global``)."""
    flags = 0
    leading = True
    seen = 0
    for _, _, nodes in units:
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                if not leading or any(alias.name != "annotations" for alias in node.names):
                    return None
                flags = __future__.annotations.compiler_flag
            elif not (leading and not seen and _is_docstring(node)):
                leading = False
            if _declares_global(node):
                return None
            seen += 1
    return flags


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _declares_global(node: ast.AST) -> bool:
    """Whether a top-level statement has a ``global`` in module scope (outside def/class)."""
    if isinstance(node, ast.Global):
        return True
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.expr):
        return False  # another scope, or an expression (no statement inside)
    return any(_declares_global(child) for child in ast.iter_child_nodes(node))


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

    Optional: guarded by ``except ImportError``, or lazy (inside a function body, run only
    when that function is called). Imports are statements, so only statement lists are
    walked, never expressions.
    """
    for node in statements:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, optional
        elif isinstance(node, ast.If) and is_type_checking(node.test):
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
    tree: ast.Module,
    *,
    source_packages: frozenset[str],
    declared: frozenset[str],
    probes: dict[str, bool],
    deltas: Sequence[int] | None = None,
) -> list[Finding]:
    findings: list[Finding] = []
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
) -> list[Finding]:
    """Import findings of one top-level statement whose lines are ``delta`` behind the file."""
    findings: list[Finding] = []
    for node, optional in _imports([statement]):
        line, col = node.lineno + delta, node.col_offset + 1
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
            elif not (_is_declared(top, declared) or _installed(top, probes)):
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


def _installed(top: str, probes: dict[str, bool]) -> bool:
    if top not in probes:
        probes[top] = is_installed(top)
    return probes[top]


# --------------------------------------------------------------------------- cache


class CheckCache:
    """The static findings of file contents already checked, one JSON file each in a folder.

    A key is the SHA-256 of the file's bytes, the source of :data:`CHECK_MODULES` and the
    Python version (its standard library). An entry also records which third-party modules
    the import check looked up and whether they were installed; a hit whose lookups now
    answer differently is a miss, so a cached result is always what a fresh check returns.
    Unreadable or unwritable entries are misses, never errors.
    """

    def __init__(self, folder: Path) -> None:
        from nnrag.versions import code_fingerprint

        self.folder = folder
        self._salt = "\0".join(
            (code_fingerprint(*CHECK_MODULES), sys.version, sys.implementation.cache_tag or "")
        ).encode()

    def key(self, data: bytes) -> str:
        """The entry name of a file's content."""
        return hashlib.sha256(self._salt + b"\0" + data).hexdigest()

    def get(self, key: str) -> tuple[Finding, ...] | None:
        """The findings stored under ``key``, if any and still exact."""
        try:
            entry = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
            probes: dict[str, bool] = entry["installed"]
            if any(is_installed(top) != installed for top, installed in probes.items()):
                return None
            return tuple(_finding(*fields) for fields in entry["findings"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, findings: tuple[Finding, ...], probes: Mapping[str, bool]) -> None:
        """Store the findings of a fresh check (atomically; silently skipped if impossible)."""
        entry = {
            "findings": [[f.code, f.message, f.line, f.col] for f in findings],
            "installed": dict(probes),
        }
        path = self.folder / f"{key}.json"
        partial = path.with_name(f"{key}.{os.getpid()}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps(entry), encoding="utf-8")
            os.replace(partial, path)
        except OSError:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
