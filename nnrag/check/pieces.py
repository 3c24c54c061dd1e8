"""Piece-by-piece parsing and compiling of a file's top-level statements, shared within a run."""

from __future__ import annotations
import __future__

import ast
import warnings
from dataclasses import dataclass, field

__all__ = ["Compiled", "Unit", "compile_units", "parse_units", "statement_units"]


@dataclass(slots=True)
class Compiled:
    """What a run parsed and compiled cleanly so far, by the text of a top-level statement."""

    statements: set[tuple[int, str]] = field(default_factory=set)
    """``(compiler flags, text)`` of the statements compiled."""
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
    code: str, units: list[Unit], filename: str, compiled: Compiled, *, relative: bool
) -> list[int] | None:
    """Compile ``code`` (raises its ``SyntaxError``), skipping statements compiled before;
    the line offset of each top-level statement (None: compiled as a whole file).

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
    done = compiled.statements
    fresh = list(dict.fromkeys(text for _, text in texts if (flags, text) not in done))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning: compile the whole file to show it
            for text in fresh:  # compile() runs the symbol-table pass too (bad nonlocal ...)
                compile(text, filename, "exec", flags, dont_inherit=True)
    except (SyntaxError, ValueError, Warning):
        compile(code, filename, "exec", dont_inherit=True)
        return None
    done.update((flags, text) for text in fresh)
    if relative:
        return [0 for _ in texts]
    return [first - 1 for first, _ in texts]


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
