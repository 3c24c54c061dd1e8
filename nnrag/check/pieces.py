"""Piece-by-piece parsing and compiling of a file's top-level statements, shared within a run."""

from __future__ import annotations
import __future__

import ast
import re
import sys
import warnings
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from types import CodeType

from nnrag.pyscope.scoping import FunctionNode, FunctionReads

__all__ = [
    "Compiled",
    "Unit",
    "compile_units",
    "function_reads",
    "parse_units",
    "statement_units",
]


@dataclass(slots=True)
class Compiled:
    """What a run parsed and compiled cleanly so far, by the text of a top-level statement."""

    statements: dict[tuple[int, str], CodeType] = field(default_factory=dict)
    """``(compiler flags, text)`` of the statements compiled -> their code."""
    trees: dict[str, list[ast.stmt]] = field(default_factory=dict)
    """``text -> ast`` of the pieces parsed (see :func:`parse_units`)."""


Unit = tuple[int, str, list[ast.stmt]]
"""A top-level statement: its first line in the file, its text, its ast (one node, or none
for comments only)."""


def parse_units(code: str, filename: str, compiled: Compiled) -> list[Unit] | None:
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


def statement_units(code: str, tree: ast.Module) -> list[Unit] | None:
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


def compile_units(
    code: str, units: list[Unit], filename: str, compiled: Compiled
) -> list[CodeType] | None:
    """Compile ``code`` (raises its ``SyntaxError``), skipping statements compiled before;
    the code of each top-level statement (None: compiled as a whole file).

    Each top-level statement is compiled on its own, under the file's ``__future__`` flags,
    unless its text is in ``compiled``: what the compiler checks of a statement, and its
    scopes, depend only on that statement, those flags and a module-level ``global`` (such
    files are compiled whole). A statement that fails or warns on its own makes the whole
    file compile, so the error (the first the compiler finds), its position and any warning
    are exactly the file's own.
    """
    flags = _future_flags(units)
    if flags is None:
        compile(code, filename, "exec", dont_inherit=True)
        return None
    texts = [text for _, text, nodes in units if nodes]
    done = compiled.statements
    fresh = list(dict.fromkeys(text for text in texts if (flags, text) not in done))
    made: dict[tuple[int, str], CodeType] = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning: compile the whole file to show it
            for text in fresh:  # compile() runs the symbol-table pass too (bad nonlocal ...)
                made[(flags, text)] = compile(text, filename, "exec", flags, dont_inherit=True)
    except (SyntaxError, ValueError, Warning):
        compile(code, filename, "exec", dont_inherit=True)
        return None
    done.update(made)
    return [done[(flags, text)] for text in texts]


_WORD = re.compile(r"\.?[A-Za-z_]\w*(?:\s*=(?!\s*[=}!:]))?")
"""An identifier, with the dot before it (an attribute) or the ``=`` after it (a store, a
keyword argument or a default; not ``==``, nor an f-string's ``{x=}``) if any; the other
identifiers are the names the text may read, with words of strings and comments, which
only make the set larger."""
_LOCALS_ARE_FAST = sys.version_info < (3, 12)
"""Before Python 3.12 a name in a code object's locals, cells or free variables is never
read from the module there (3.12 inlines comprehensions, whose variables join the locals
of the function around them)."""


def function_reads(units: list[Unit], codes: list[CodeType]) -> FunctionReads:
    """Whether a def in top-level statement ``top`` of the units' tree (lines counted from
    its piece, as :func:`parse_units` parses them) may read from the module a name that is
    not ``known``, from the compiler: some name of its code objects (globals, attributes,
    imports; less each one's own locals, cells and free variables) that is not known and
    that its body's text spells as a name (not right after a dot, nor before an ``=``).
    True when its code is not found.
    """
    pieces = [text for _, text, nodes in units if nodes]
    tables: dict[int, tuple[list[str], dict[tuple[str, int], CodeType | None]]] = {}

    def reads(top: int, node: FunctionNode, known: Container[str]) -> bool:
        found = tables.get(top)
        if found is None:
            found = tables[top] = (pieces[top].split("\n"), _functions(codes[top]))
        lines, functions = found
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        code = functions.get((node.name, first))
        if code is None:
            return True
        unknown = [name for name in _names(code) if name not in known]
        if not unknown:
            return False
        text = "\n".join(lines[node.body[0].lineno - 1 : node.end_lineno])
        if not text.isascii():  # a name NFKC may spell otherwise
            return True
        words = set(_WORD.findall(text))  # ".attr" and "name=" never equal a name
        return any(name in words for name in unknown)

    return reads


def _functions(code: CodeType) -> dict[tuple[str, int], CodeType | None]:
    """The code objects nested in ``code`` by (name, first line); None where two share it."""
    found: dict[tuple[str, int], CodeType | None] = {}
    for inner in _nested(code):
        key = (inner.co_name, inner.co_firstlineno)
        found[key] = None if key in found else inner
    return found


def _nested(code: CodeType) -> Iterator[CodeType]:
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield const
            yield from _nested(const)


def _names(code: CodeType) -> set[str]:
    """The names ``code`` and the code nested in it may read from the module (a superset)."""
    found: set[str] = set()
    for inner in (code, *_nested(code)):
        names = set(inner.co_names)
        if _LOCALS_ARE_FAST:
            names.difference_update(inner.co_varnames, inner.co_cellvars, inner.co_freevars)
        found |= names
    return found


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
