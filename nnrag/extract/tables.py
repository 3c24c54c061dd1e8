"""String tables: a module-level dict literal of names -> definitions, carried entry by entry.

``ACT2CLS = {"gelu": GELUActivation, "relu": ReLU, ...}`` read as ``TABLE[config.act]``
names every definition it could hold, and including the unit used to include all of them
(and what each reads). An entry is code only a key can reach, and a key is a string: the
table is split like a plain class (:mod:`nnrag.extract.methods`), each entry a prunable
member named by its key. A table is cut only when the closure gives one of its keys as a
value (:func:`value_strings`: a default ``act="gelu"``, a config attribute, a keyword
argument): then the block's own defaults and config choose the key, and an entry is kept
when its key occurs in a word of the closure (a quoted string, an attribute, a name it
defines: keys are often cut out of such words or assembled from them). A table none of
whose keys is such a value is read with keys from outside the closure (a caller's config)
and is carried whole. Entries whose values name no definition of the sources (constants,
external classes) are always kept: they bring nothing. A key the block computes from a
word it does not carry raises ``KeyError`` at run time; the closure says which tables it
cut (``dynamic-registry``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from nnrag.extract.lookups import read_chains
from nnrag.extract.parts import part_index, part_of, rest_of
from nnrag.extract.syntax import nodes
from nnrag.model import ModuleInfo, Unit

if TYPE_CHECKING:
    from nnrag.index.symbols import Symbols

__all__ = ["compared_only", "drop_entries", "table_entries", "value_strings"]


def table_entries(
    info: ModuleInfo, unit: Unit, tree: ast.Module, symbols: Symbols
) -> tuple[Unit, list[tuple[str, Unit, ast.expr]], list[ast.expr]] | None:
    """(the unit without its prunable entries' reads, [(key, entry unit, value)], the
    values always kept) of a string table; ``None`` for any other unit."""
    if len(tree.body) != 1 or len(unit.binds) != 1:
        return None
    stmt = tree.body[0]
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
    if not isinstance(value, ast.Dict) or len(value.keys) < 2:
        return None
    keys: list[ast.Constant] = []
    for key in value.keys:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None  # ``**other`` or a computed key: not a table of names
        keys.append(key)
    if len({key.value for key in keys}) != len(keys):
        return None
    offset = unit.start_line - 1
    entries: list[tuple[str, Unit, ast.expr]] = []
    taken: set[str] = set()
    others: set[str] = set()
    plain: list[ast.expr] = []
    for number, (key, node) in enumerate(zip(keys, value.values, strict=True)):
        chains = read_chains([node])
        if not any(_internal(symbols, info, unit, chain) for chain in chains):
            others |= chains  # constants, external classes: nothing to carry
            plain.append(node)
            continue
        span = (key.lineno + offset, (node.end_lineno or node.lineno) + offset)
        part = part_of(unit, part_index(unit, number + 1), span, chains)
        entries.append((str(key.value), part, node))
        taken |= chains
    if not entries:
        return None
    theirs = taken - others
    always = rest_of(
        unit,
        part_index(unit, 0),
        [(part.start_line, part.end_line) for _, part, _ in entries],
        theirs,
    )
    return always, entries, plain


def value_strings(tree: ast.AST) -> frozenset[str]:
    """Strings ``tree`` gives as values: parameter defaults (``act="gelu"``), keyword
    arguments (``Config(act="gelu")``, ``dict(type="BN")``) and assigned constants
    (``hidden_act = "gelu"``) — where a key a table is read with comes from."""
    found: set[str] = set()
    for node in nodes(tree):
        values: list[ast.expr | None] = []
        if isinstance(node, ast.arguments):
            values += [*node.defaults, *node.kw_defaults]
        elif isinstance(node, (ast.keyword, ast.Assign, ast.AnnAssign)):
            values.append(node.value)
        found.update(
            value.value
            for value in values
            if isinstance(value, ast.Constant) and isinstance(value.value, str)
        )
    return frozenset(found)


def compared_only(tree: ast.AST) -> frozenset[str]:
    """The strings that occur in ``tree`` only as operands of comparisons, alone or in a
    literal list, tuple or set (``t == 'BN'``, ``t in ['Tanh', 'GELU']``)."""
    operands: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, (ast.List, ast.Tuple, ast.Set)):
                    operands.update(id(element) for element in operand.elts)
                else:
                    operands.add(id(operand))
    compared: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            (compared if id(node) in operands else other).add(node.value)
    return frozenset(compared - other)


def _internal(symbols: Symbols, info: ModuleInfo, unit: Unit, chain: str) -> bool:
    if chain not in unit.load_reads:
        return False
    return symbols.lookup(info, chain, before=unit.start_line).kind == "definition"


def drop_entries(chunk: str, keys: frozenset[str]) -> str:
    """``chunk`` (one ``NAME = {...}`` statement, maybe after a ``# from`` comment) without
    the entries ``keys``: whole lines where an entry has its lines to itself, else the
    ``key: value,`` text. Unchanged if it does not parse."""
    try:
        tree = ast.parse(chunk)
    except SyntaxError:
        return chunk
    stmts = [n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))]
    value = stmts[0].value if len(stmts) == 1 else None
    if not isinstance(value, ast.Dict):
        return chunk
    lines = [line.encode() for line in chunk.splitlines(keepends=True)]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    data = b"".join(lines)
    cuts: list[tuple[int, int]] = []
    items = list(zip(value.keys, value.values, strict=True))
    gone = [isinstance(key, ast.Constant) and key.value in keys for key, _ in items]

    def at(line: int, col: int) -> int:
        return starts[line - 1] + col

    for number, (key, node) in enumerate(items):
        if not gone[number] or key is None:
            continue
        begin = at(key.lineno, key.col_offset)
        end = at(node.end_lineno or node.lineno, node.end_col_offset or 0)
        line_start, line_end = starts[key.lineno - 1], starts[node.end_lineno or node.lineno]
        rest = data[end:line_end].split(b"#", 1)[0].strip()
        if not data[line_start:begin].strip() and rest in (b"", b","):
            cuts.append((line_start, line_end))  # the entry's own lines
        elif any(not g for g in gone[number + 1 :]):  # up to the next entry
            following = items[number + 1][0]
            assert following is not None  # no ``**`` in a table
            cuts.append((begin, at(following.lineno, following.col_offset)))
        else:  # no kept entry after it: from the end of the kept one before it
            kept = [v for v, g in zip(value.values, gone[:number], strict=False) if not g]
            if kept:
                before = kept[-1]
                cuts.append(
                    (at(before.end_lineno or before.lineno, before.end_col_offset or 0), end)
                )
            else:
                comma = data.find(b",", end, line_end)
                cuts.append((begin, end if comma < 0 else comma + 1))
    merged: list[list[int]] = []
    for first, last in sorted(cuts):
        if merged and first <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    for first, last in reversed(merged):
        data = data[:first] + data[last:]
    return data.decode()
