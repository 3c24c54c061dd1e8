"""Three-way merge of block bodies, one top-level statement (definition, import, ...) at a time."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Chunk", "Merged", "chunks", "merge3"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    """One top-level statement of a body, with the comments and blank lines before it."""

    key: str
    """What it is across versions: ``class Mlp``, ``def _scale``, ``= LIMIT``, ``import ...``."""
    label: str
    """How a message names it (``Mlp``, ``_scale``, ``import torch``)."""
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Merged:
    """The merged body and the definitions both sides changed differently."""

    text: str
    conflicts: tuple[str, ...] = ()
    """Labels of the statements changed (or removed) differently on both sides; the user's
    version is kept for each."""
    taken: tuple[str, ...] = ()
    """Labels of the statements taken from the new version (added or changed there)."""
    dropped: tuple[str, ...] = ()
    """Labels of the statements the new version removed (and the user had not changed)."""

    @property
    def clean(self) -> bool:
        return not self.conflicts


def chunks(body: str) -> list[Chunk] | None:
    """The top-level statements of ``body`` as chunks, or None if it does not parse.

    Joining the chunks' texts gives ``body`` back. A name bound twice gets ``#2`` in its key.
    """
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError):
        return None
    lines = body.splitlines(keepends=True)
    found: list[Chunk] = []
    seen: dict[str, int] = {}
    start = 0
    for number, node in enumerate(tree.body):
        end = node.end_lineno or node.lineno
        if number + 1 < len(tree.body):
            nxt = tree.body[number + 1]
            following = min([nxt.lineno, *(d.lineno for d in getattr(nxt, "decorator_list", []))])
            if following <= end:
                return None  # two statements on one line: no line boundary between them
        key, label = _identity(node, "".join(lines[start:end]))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key, label = f"{key}#{seen[key]}", f"{label} (#{seen[key]})"
        found.append(Chunk(key=key, label=label, text="".join(lines[start:end])))
        start = end
    if start < len(lines):
        found.append(Chunk(key="<end>", label="trailing comments", text="".join(lines[start:])))
    return found


def _identity(node: ast.stmt, text: str) -> tuple[str, str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return f"def {node.name}", node.name
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}", node.name
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if names and len(names) == len(targets):
            return "= " + ", ".join(names), ", ".join(names)
    if isinstance(node, ast.Import | ast.ImportFrom):
        written = ast.unparse(node)
        return written, written
    written = ast.unparse(node)  # anything else is known by its code (a change: remove + add)
    first = written.splitlines()[0] if written else text.strip()
    return f"stmt {written}", f"statement {first[:60]!r}"


def merge3(
    base: str | Mapping[str, str],
    mine: str,
    theirs: str,
    *,
    digests: Callable[[str], Mapping[str, str]] | None = None,
) -> Merged:
    """Merge ``mine`` (the user's body) and ``theirs`` (the new one), both made from ``base``.

    Per top-level statement: unchanged on one side takes the other side's version (including
    its removal); changed alike on both is taken once; changed differently is a conflict that
    keeps ``mine``. Statements keep ``theirs``' order; the user's own statements follow the
    statement they followed in ``mine``. A body that does not parse is a conflict as a whole.

    ``base`` is the base body, or only the digests of its definitions (``name -> digest`` as
    ``digests``, e.g. :func:`nnrag.check.static.definition_digests`, computes them and the
    vendoring manifest records them): then definitions merge as above, and any other
    statement (imports, code) found on one side only is kept (the base cannot say whether
    the other side removed it).
    """
    if isinstance(base, str):
        if mine in (base, theirs):
            return Merged(text=theirs, taken=_labels_changed(base, theirs))
        if theirs == base:
            return Merged(text=mine)
    elif mine == theirs:
        return Merged(text=mine)
    before = chunks(base) if isinstance(base, str) else []
    after, upstream = chunks(mine), chunks(theirs)
    if before is None or after is None or upstream is None:
        return Merged(text=mine, conflicts=("the whole file (it does not parse)",))
    old, ours, new = ({c.key: c for c in found} for found in (before, after, upstream))
    same = None
    if not isinstance(base, str):
        if digests is None:
            raise TypeError("merge3: a base given by digests needs `digests`")
        same = _Digests(base, digests(mine), digests(theirs))
    result: dict[str, str] = {}
    conflicts: list[str] = []
    taken: list[str] = []
    dropped: list[str] = []
    for key in dict.fromkeys([*(c.key for c in upstream), *(c.key for c in after)]):
        m, t = _text(ours, key), _text(new, key)
        label = (ours.get(key) or new[key]).label
        if same is None:
            b = _text(old, key)
            mine_is_base, theirs_is_base = m == b, t == b
        else:
            mine_is_base, theirs_is_base = same.unchanged(key, m, t)
        side = new if m == t and key in new else ours  # the same: spaced as the new body
        if m != t and not theirs_is_base:
            if mine_is_base:
                side = new
                (taken if key in new else dropped).append(label)
            else:
                conflicts.append(label)
        if key in side:
            result[key] = side[key].text
    ordered = _order(list(result), [c.key for c in after], [c.key for c in upstream])
    text = "".join(result[key] for key in ordered)
    return Merged(text=text, conflicts=tuple(conflicts), taken=tuple(taken), dropped=tuple(dropped))


class _Digests:
    """Whether each side left a statement as it was in a base known by definition digests."""

    def __init__(
        self, base: Mapping[str, str], mine: Mapping[str, str], theirs: Mapping[str, str]
    ) -> None:
        self.base = base
        self.mine = mine
        self.theirs = theirs

    def unchanged(self, key: str, mine: str | None, theirs: str | None) -> tuple[bool, bool]:
        names = _defined_names(key)
        if not names:  # not a definition: present on one side only -> that side changed it
            return theirs is not None, mine is not None
        return (
            all(self.mine.get(n) == self.base.get(n) for n in names),
            all(self.theirs.get(n) == self.base.get(n) for n in names),
        )


def _defined_names(key: str) -> list[str]:
    key = key.split("#", 1)[0]
    for prefix in ("def ", "class ", "= "):
        if key.startswith(prefix):
            return [name.strip() for name in key[len(prefix) :].split(",")]
    return []


def _text(side: dict[str, Chunk], key: str) -> str | None:
    """A chunk's statement text without the blank lines around it (spacing is not an edit)."""
    chunk = side.get(key)
    return None if chunk is None else chunk.text.strip("\n") + "\n"


def _order(keys: Sequence[str], mine: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """``keys`` in ``theirs``' order; a key only in ``mine`` goes right after the statement
    before it there (else right before the one after it, else after the leading imports)."""
    wanted = set(keys)
    order = [key for key in theirs if key in wanted]
    placed = set(order)
    previous: str | None = None
    for number, key in enumerate(mine):
        if key in wanted and key not in placed:
            if previous is not None:
                at = order.index(previous) + 1
            else:
                following = next((k for k in mine[number + 1 :] if k in placed), None)
                at = order.index(following) if following is not None else _after_imports(order)
            order.insert(at, key)
            placed.add(key)
        if key in placed:
            previous = key
    return order


def _after_imports(order: Sequence[str]) -> int:
    """Where a user's statement that had nothing before it goes: after the leading imports."""
    at = 0
    for key in order:
        if not key.startswith(("import ", "from ")):
            break
        at += 1
    return at


def _labels_changed(base: str, new: str) -> tuple[str, ...]:
    before, after = chunks(base), chunks(new)
    if before is None or after is None:
        return ()
    old = {c.key: _text({c.key: c}, c.key) for c in before}
    return tuple(c.label for c in after if old.get(c.key) != _text({c.key: c}, c.key))
