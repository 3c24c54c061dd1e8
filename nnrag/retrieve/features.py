"""Normalized code and its features: token shingles (lexical), AST subtree hashes (structural)."""

from __future__ import annotations

import ast
import hashlib
import re
import zlib

import numpy as np
from numpy.typing import NDArray

_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _strip_docstrings(tree: ast.AST) -> list[ast.Constant]:
    """Remove module, class and function docstrings (walking statements only); return them."""
    removed: list[ast.Constant] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            assert isinstance(body, list)
            first = body[0] if body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                removed.append(first.value)
                del body[0]
                if not body and not isinstance(node, ast.Module):
                    body.append(ast.Pass())
        for field_name in _BODIES:
            children = getattr(node, field_name, None)
            if isinstance(children, list):
                stack.extend(child for child in children if isinstance(child, ast.stmt | ast.AST))
    return removed


_TOKEN = re.compile(
    r"#[^\n]*"
    r'|[rRbBuUfF]{0,2}"""(?:\\.|[^\\])*?"""'
    r"|[rRbBuUfF]{0,2}'''(?:\\.|[^\\])*?'''"
    r'|[rRbBuUfF]{0,2}"(?:\\.|[^"\\\n])*"'
    r"|[rRbBuUfF]{0,2}'(?:\\.|[^'\\\n])*'"
    r"|[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|\S",
    re.DOTALL,
)


def _blank(code: str, spans: list[ast.Constant]) -> str:
    """``code`` with the given nodes' source replaced by spaces (positions are kept)."""
    if not spans:
        return code
    lines = code.splitlines(keepends=True)
    for node in spans:
        if node.end_lineno is None or node.end_col_offset is None:
            continue
        first, last = node.lineno - 1, node.end_lineno - 1
        if first == last:
            line = lines[first].encode("utf-8")
            line = (
                line[: node.col_offset]
                + b" " * (node.end_col_offset - node.col_offset)
                + line[node.end_col_offset :]
            )
            lines[first] = line.decode("utf-8", "replace")
            continue
        head = lines[first].encode("utf-8")[: node.col_offset].decode("utf-8", "replace")
        lines[first] = head + "\n"
        for middle in range(first + 1, last):
            lines[middle] = "\n"
        lines[last] = lines[last].encode("utf-8")[node.end_col_offset :].decode("utf-8", "replace")
    return "".join(lines)


def code_tokens(code: str, tree: ast.AST | None = None) -> tuple[ast.Module, list[str]]:
    """The parsed tree (docstrings removed) and the code's tokens without comments/docstrings."""
    module = ast.parse(code) if tree is None else tree
    assert isinstance(module, ast.Module)
    docstrings = _strip_docstrings(module)
    tokens = [token for token in _TOKEN.findall(_blank(code, docstrings)) if token[0] != "#"]
    return module, tokens


def normalize(code: str) -> tuple[ast.Module, str]:
    """Parse ``code`` without docstrings; the tree and its canonical token text.

    Whitespace, comments and docstrings do not change the text (tokens joined by spaces).
    """
    tree, tokens = code_tokens(code)
    return tree, " ".join(tokens)


def exact_key(text: str) -> str:
    """Level 1 key: SHA-256 of the canonical text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(values: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """splitmix64 finalizer: spreads structured 64-bit values over all bits."""
    with np.errstate(over="ignore"):
        values = values ^ (values >> np.uint64(30))
        values = values * np.uint64(0xBF58476D1CE4E5B9)
        values = values ^ (values >> np.uint64(27))
        values = values * np.uint64(0x94D049BB133111EB)
        return values ^ (values >> np.uint64(31))


class Vocabulary:
    """Token -> stable 64-bit id (CRC-32 based: the same in every process and run)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def encode(self, tokens: list[str]) -> NDArray[np.uint64]:
        ids = self.ids
        out = np.empty(len(tokens), dtype=np.uint64)
        for position, token in enumerate(tokens):
            found = ids.get(token)
            if found is None:
                found = ids[token] = zlib.crc32(token.encode("utf-8")) | (len(token) << 32)
            out[position] = found
        return out


def shingle_hashes(tokens: list[str], size: int, vocabulary: Vocabulary) -> NDArray[np.uint64]:
    """Sorted unique 64-bit hashes of every run of ``size`` consecutive code tokens."""
    ids = vocabulary.encode(tokens)
    count = max(len(ids) - size + 1, 1)
    hashes = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for offset in range(min(size, len(ids))):
            hashes = hashes * _GOLDEN + _mix(ids[offset : offset + count])
    return np.unique(_mix(hashes))


def shingles(text: str, size: int) -> frozenset[int]:
    """Level 2 features of ``text``: hashes of its token shingles (for inspection and tests)."""
    tokens = [token for token in _TOKEN.findall(text) if token[0] != "#"]
    return frozenset(int(value) for value in shingle_hashes(tokens, size, Vocabulary()))


_KINDS: dict[str, int] = {
    name: number
    for number, name in enumerate(
        sorted(name for name, value in vars(ast).items() if isinstance(value, type))
    )
}
_IDENTIFIER_FIELDS = frozenset({"id", "arg", "attr", "name", "module", "asname", "names"})
_SKIPPED_FIELDS = frozenset({"ctx", "type_comment", "kind", "lineno", "col_offset"})


_FIELDS: dict[type, tuple[str, ...]] = {}
_LITERAL_TYPES = ("NoneType", "bool", "int", "float", "complex", "str", "bytes", "ellipsis")


def _leaf(value: object) -> int:
    """A literal value normalized to its type."""
    name = type(value).__name__
    return 1 + _LITERAL_TYPES.index(name) if name in _LITERAL_TYPES else 99


def _fingerprint_list(tree: ast.AST, min_size: int) -> list[int]:
    """Level 3 features: hashes of AST subtrees with identifiers and literals normalized.

    A multiset: the n-th occurrence of a subtree is its own feature, so that repeated
    statements (``x = self.fc1(x)``, ``x = self.fc2(x)`` both become ``_ = _._(_)``) still
    count. Integer tuple hashes are deterministic across processes (unlike ``str`` hashes), so
    the fingerprints, and everything computed from them, are reproducible.
    """
    found: list[int] = []
    seen: dict[int, int] = {}

    def visit(node: ast.AST) -> tuple[int, int]:
        kind = type(node)
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _FIELDS[kind] = tuple(
                name for name in kind._fields if name not in _SKIPPED_FIELDS
            )
        parts: list[int] = [_KINDS.get(kind.__name__, -3)]
        size = 1
        for name in fields:
            value = getattr(node, name, None)
            if name in _IDENTIFIER_FIELDS and not isinstance(value, list | ast.AST):
                parts.append(0)
            elif isinstance(value, ast.AST):
                child, child_size = visit(value)
                parts.append(child)
                size += child_size
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        child, child_size = visit(item)
                        parts.append(child)
                        size += child_size
                    else:
                        parts.append(0 if name in _IDENTIFIER_FIELDS else _leaf(item))
                parts.append(-1)
            else:
                parts.append(_leaf(value))
        digest = hash(tuple(parts))
        if size >= min_size:
            occurrence = seen.get(digest, 0)
            seen[digest] = occurrence + 1
            found.append(hash((digest, occurrence)))
        return digest, size

    visit(tree)
    return found


def fingerprint_hashes(tree: ast.AST, min_size: int) -> NDArray[np.uint64]:
    values = np.array(_fingerprint_list(tree, min_size), dtype=np.int64).view(np.uint64)
    return np.unique(_mix(values))


def fingerprints(tree: ast.AST, min_size: int) -> frozenset[int]:
    """Level 3 features of a tree (for inspection and tests)."""
    return frozenset(int(value) for value in fingerprint_hashes(tree, min_size))


def sorted_unique(values: NDArray[np.uint64]) -> NDArray[np.uint64]:
    values = np.sort(values)
    if len(values) < 2:
        return values
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def jaccard(first: NDArray[np.uint64], second: NDArray[np.uint64]) -> float:
    """Exact Jaccard similarity of two sorted unique arrays (1.0 for two empty ones)."""
    union = len(first) + len(second)
    if union == 0:
        return 1.0
    if len(first) > len(second):
        first, second = second, first
    if len(first) == 0:
        return 0.0
    # Both arrays are sorted: look each element of the smaller one up in the larger one.
    where = np.searchsorted(second, first)
    where[where == len(second)] = 0
    common = int(np.count_nonzero(second[where] == first))
    return common / (union - common)
