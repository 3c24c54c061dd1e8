"""Three-level de-duplication of block code: exact, lexical (MinHash/LSH), structural (AST)."""

from __future__ import annotations

import ast
import hashlib
import io
import time
import tokenize
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from nnrag.index import Index
    from nnrag.model import BlockRef, Closure, ImportBinding
    from nnrag.workspace import Workspace

Level = Literal["exact", "lexical", "structural"]
LEVELS: tuple[Level, ...] = ("exact", "lexical", "structural")
Scope = Literal["class", "closure"]
Feature = str | int


@dataclass(frozen=True, slots=True, kw_only=True)
class DedupParams:
    """Thresholds (configurable) and hashing parameters (fixed by default, for reproducibility)."""

    lexical_threshold: float = 0.90
    structural_threshold: float = 0.90
    num_perm: int = 128
    """MinHash permutations."""
    seed: int = 1
    """MinHash seed."""
    shingle: int = 5
    """Tokens per lexical shingle."""
    min_subtree: int = 4
    """Smallest AST subtree (in nodes) that becomes a structural fingerprint."""
    lsh_weights: tuple[float, float] = (0.01, 0.99)
    """LSH (false positive, false negative) weights: favour recall, since every candidate pair
    is verified by exact Jaccard (at 0.90, 11 bands of 11 rows find 98% of pairs at 0.90)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Cluster:
    """Blocks that are duplicates of each other after a level (ids sorted, first is kept)."""

    members: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelResult:
    """Uniqueness after one level (levels are cumulative: structural includes lexical and exact)."""

    level: Level
    unique: int
    """Distinct blocks left after merging the duplicates found up to this level."""
    pairs: int
    """Duplicate pairs found at this level (verified), before merging."""
    clusters: tuple[Cluster, ...]
    """Groups of two or more blocks, largest first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DedupResult:
    """De-duplication of one set of code strings (target classes, or whole closures)."""

    scope: Scope
    total: int
    levels: tuple[LevelResult, ...]
    skipped: tuple[str, ...] = ()
    """Ids whose code does not parse (left out of every level)."""
    seconds: float = 0.0
    params: DedupParams = field(default_factory=DedupParams)

    def level(self, level: Level) -> LevelResult:
        return next(result for result in self.levels if result.level == level)

    def merged_at(self, first: str, second: str) -> Level | None:
        """The first level at which ``first`` and ``second`` are in the same cluster."""
        for result in self.levels:
            for cluster in result.clusters:
                if first in cluster.members and second in cluster.members:
                    return result.level
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class DedupReport:
    """Both scopes: the target class alone and the whole extracted closure."""

    target: DedupResult
    closure: DedupResult | None = None


# --------------------------------------------------------------------------- normalization


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            del body[0]
            if not body and not isinstance(node, ast.Module):
                body.append(ast.Pass())


def normalize(code: str) -> tuple[ast.Module, str]:
    """Parse ``code`` without docstrings; the tree and its canonical text (no comments)."""
    tree = ast.parse(code)
    _strip_docstrings(tree)
    return tree, ast.unparse(tree)


def exact_key(text: str) -> str:
    """Level 1 key: SHA-256 of the canonical text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_TOKEN_TYPES = frozenset({tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING})


def shingles(text: str, size: int) -> frozenset[str]:
    """Level 2 features: every run of ``size`` consecutive code tokens."""
    tokens = [
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type in _TOKEN_TYPES
    ]
    if len(tokens) <= size:
        return frozenset({"\x1f".join(tokens)})
    return frozenset("\x1f".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1))


_KINDS: dict[str, int] = {
    name: number
    for number, name in enumerate(
        sorted(name for name, value in vars(ast).items() if isinstance(value, type))
    )
}
_IDENTIFIER_FIELDS = frozenset({"id", "arg", "attr", "name", "module", "asname", "names"})
_SKIPPED_FIELDS = frozenset({"ctx", "type_comment", "kind", "lineno", "col_offset"})


_LITERAL_TYPES = ("NoneType", "bool", "int", "float", "complex", "str", "bytes", "ellipsis")


def _leaf(value: object) -> int:
    """A literal value normalized to its type."""
    name = type(value).__name__
    return 1 + _LITERAL_TYPES.index(name) if name in _LITERAL_TYPES else 99


def fingerprints(tree: ast.AST, min_size: int) -> frozenset[int]:
    """Level 3 features: hashes of AST subtrees with identifiers and literals normalized.

    A multiset: the n-th occurrence of a subtree is its own feature, so that repeated
    statements (``x = self.fc1(x)``, ``x = self.fc2(x)`` both become ``_ = _._(_)``) still
    count. Integer tuple hashes are deterministic across processes (unlike ``str`` hashes), so
    the fingerprints, and everything computed from them, are reproducible.
    """
    found: set[int] = set()
    seen: dict[int, int] = {}

    def visit(node: ast.AST) -> tuple[int, int]:
        parts: list[int] = [_KINDS.get(type(node).__name__, -3)]
        size = 1
        for name, value in ast.iter_fields(node):
            if name in _SKIPPED_FIELDS:
                continue
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
            found.add(hash((digest, occurrence)))
        return digest, size

    visit(tree)
    return frozenset(found)


def jaccard(first: frozenset[Feature], second: frozenset[Feature]) -> float:
    """Exact Jaccard similarity of two sets (1.0 for two empty sets)."""
    if not first and not second:
        return 1.0
    return len(first & second) / len(first | second)


# --------------------------------------------------------------------------- clustering


class _Components:
    """Union-find over block ids; the smallest id of a component is its representative."""

    def __init__(self, ids: Iterable[str]) -> None:
        self.parent = {item: item for item in ids}

    def find(self, item: str) -> str:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, first: str, second: str) -> None:
        a, b = self.find(first), self.find(second)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def groups(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for item in sorted(self.parent):
            out.setdefault(self.find(item), []).append(item)
        return out


def _snapshot(level: Level, components: _Components, pairs: int) -> LevelResult:
    groups = components.groups()
    clusters = sorted(
        (Cluster(members=tuple(members)) for members in groups.values() if len(members) > 1),
        key=lambda cluster: (-len(cluster.members), cluster.members[0]),
    )
    return LevelResult(level=level, unique=len(groups), pairs=pairs, clusters=tuple(clusters))


def _verified_pairs(
    features: Mapping[str, frozenset[Feature]],
    *,
    threshold: float,
    params: DedupParams,
) -> list[tuple[str, str]]:
    """Pairs with Jaccard >= threshold: MinHash LSH candidates, verified by exact Jaccard."""
    from datasketch import MinHash, MinHashLSH

    try:
        lsh = MinHashLSH(threshold=threshold, num_perm=params.num_perm, weights=params.lsh_weights)
    except ValueError:  # thresholds near 1.0 leave datasketch fewer than 2 bands
        bands = 4
        lsh = MinHashLSH(num_perm=params.num_perm, params=(bands, params.num_perm // bands))
    sketches: dict[str, MinHash] = {}
    for key in sorted(features):
        sketch = MinHash(num_perm=params.num_perm, seed=params.seed)
        sketch.update_batch([_encode(value) for value in features[key]])
        lsh.insert(key, sketch, check_duplication=False)
        sketches[key] = sketch
    pairs: list[tuple[str, str]] = []
    for key in sorted(features):
        for other in sorted(lsh.query(sketches[key])):
            if other > key and jaccard(features[key], features[other]) >= threshold:
                pairs.append((key, other))
    return pairs


def _encode(value: object) -> bytes:
    if isinstance(value, int):
        return value.to_bytes(8, "little", signed=True)
    return str(value).encode("utf-8")


# --------------------------------------------------------------------------- entry points


def dedup(
    codes: Mapping[str, str], *, scope: Scope = "class", params: DedupParams | None = None
) -> DedupResult:
    """De-duplicate code strings keyed by block id at the three levels, cumulatively."""
    params = params or DedupParams()
    import datasketch  # noqa: F401  (imported before the clock starts: a one-off cost)

    started = time.perf_counter()
    trees: dict[str, ast.Module] = {}
    texts: dict[str, str] = {}
    skipped: list[str] = []
    for key in sorted(codes):
        try:
            trees[key], texts[key] = normalize(codes[key])
        except (SyntaxError, ValueError, RecursionError):
            skipped.append(key)
    components = _Components(trees)
    levels: list[LevelResult] = []

    by_key: dict[str, str] = {}
    exact_pairs = 0
    for key in sorted(trees):
        digest = exact_key(texts[key])
        if digest in by_key:
            components.union(by_key[digest], key)
            exact_pairs += 1
        else:
            by_key[digest] = key
    levels.append(_snapshot("exact", components, exact_pairs))

    # Exact duplicates share every feature: only one representative per exact group goes on.
    representatives = sorted(by_key.values())
    lexical = {
        key: frozenset[Feature](shingles(texts[key], params.shingle)) for key in representatives
    }
    pairs = _verified_pairs(lexical, threshold=params.lexical_threshold, params=params)
    for first, second in pairs:
        components.union(first, second)
    levels.append(_snapshot("lexical", components, len(pairs)))

    structural = {
        key: frozenset[Feature](fingerprints(trees[key], params.min_subtree))
        for key in representatives
    }
    pairs = _verified_pairs(structural, threshold=params.structural_threshold, params=params)
    for first, second in pairs:
        components.union(first, second)
    levels.append(_snapshot("structural", components, len(pairs)))

    return DedupResult(
        scope=scope,
        total=len(codes),
        levels=tuple(levels),
        skipped=tuple(skipped),
        seconds=time.perf_counter() - started,
        params=params,
    )


def class_code(index: Index, block: BlockRef) -> str | None:
    """The source text of the block's own class statement (decorators and comments included)."""
    info = index.module(block.module, prefer=block.source)
    if info is None or info.source != block.source:
        return None
    for unit in info.units:
        if unit.kind == "class" and any(cls.name == block.name for cls in unit.classes):
            lines = index.text(info).splitlines()
            return "\n".join(lines[unit.start_line - 1 : unit.end_line]) + "\n"
    return None


def _import_line(binding: ImportBinding) -> str:
    if binding.attr is None:
        top = binding.module.split(".", 1)[0]
        if binding.name == top:
            return f"import {binding.module}"
        return f"import {binding.module} as {binding.name}"
    alias = "" if binding.attr in (binding.name, "*") else f" as {binding.name}"
    return f"from {binding.module} import {binding.attr}{alias}"


def closure_text(index: Index, closure: Closure) -> str:
    """The closure's code as it is in its sources: its imports, then its units' original text.

    What emission would write minus the provenance header and collision renames (which do
    not change what is compared here), without paying for the LibCST rewrite.
    """
    lines = sorted({_import_line(binding) for binding in closure.imports})
    texts: dict[tuple[str, str], list[str]] = {}
    for ref in closure.units:
        info = index.module(ref.module, prefer=ref.source)
        if info is None:
            continue
        key = (info.source, info.module)
        if key not in texts:
            texts[key] = index.text(info).splitlines()
        unit = info.units[ref.index]
        lines.append("\n".join(texts[key][unit.start_line - 1 : unit.end_line]))
    return "\n".join(lines) + "\n"


def resolved_closure_code(index: Index) -> Callable[[BlockRef], str | None]:
    """A ``closure_code`` for :func:`dedup_blocks` from :func:`nnrag.resolve.resolve`."""
    from nnrag.errors import NnragError
    from nnrag.resolve import resolve

    def code(block: BlockRef) -> str | None:
        try:
            return closure_text(index, resolve(index, block))
        except NnragError:
            return None

    return code


def dedup_blocks(
    index: Index,
    blocks: Sequence[BlockRef],
    *,
    closure_code: Callable[[BlockRef], str | None] | None = None,
    params: DedupParams | None = None,
) -> DedupReport:
    """De-duplicate blocks on their class alone and, given ``closure_code``, on their closure.

    ``closure_code`` returns the emitted file of a block (e.g. ``extract(index, b).code``), or
    ``None`` when it cannot be extracted; the provenance header is ignored (comments).
    """
    targets: dict[str, str] = {}
    for block in blocks:
        code = class_code(index, block)
        if code is not None:
            targets[block.id] = code
    target = dedup(targets, scope="class", params=params)
    closure = None
    if closure_code is not None:
        closures: dict[str, str] = {}
        for block in blocks:
            code = closure_code(block)
            if code is not None:
                closures[block.id] = code
        closure = dedup(closures, scope="closure", params=params)
    return DedupReport(target=target, closure=closure)


def dedup_workspace(
    workspace: Workspace, *, closures: bool = True, params: DedupParams | None = None
) -> DedupReport:
    """:func:`dedup_blocks` over a workspace's blocks (what ``nnrag dedup`` and the plugin run)."""
    index = workspace.index()
    return dedup_blocks(
        index,
        workspace.blocks(),
        closure_code=resolved_closure_code(index) if closures else None,
        params=params,
    )


def _figures(result: DedupResult) -> dict[str, object]:
    counted = result.total - len(result.skipped)
    return {
        "blocks": counted,
        "skipped": len(result.skipped),
        "seconds": round(result.seconds, 3),
        **{
            level.level: {
                "unique": level.unique,
                "unique_fraction": round(level.unique / counted, 4) if counted else 0.0,
                "duplicate_pairs": level.pairs,
                "clusters": len(level.clusters),
            }
            for level in result.levels
        },
    }


def dedup_summary(report: DedupReport) -> dict[str, object]:
    """The figures (no cluster members) for reports: unique counts and fractions per level."""
    params = asdict(report.target.params)
    summary: dict[str, object] = {"params": params, "class": _figures(report.target)}
    if report.closure is not None:
        summary["closure"] = _figures(report.closure)
    return summary


def dedup_json(report: DedupReport) -> dict[str, object]:
    """The whole report as JSON data: figures plus every cluster's members per level."""
    out = dedup_summary(report)
    for name, result in (("class", report.target), ("closure", report.closure)):
        if result is None:
            continue
        figures = out[name]
        assert isinstance(figures, dict)
        figures["clusters"] = {
            level.level: [list(cluster.members) for cluster in level.clusters]
            for level in result.levels
        }
        figures["skipped_ids"] = list(result.skipped)
    return out


def format_report(report: DedupReport, *, members: int = 5) -> str:
    """Human-readable report: a table of unique counts per level, then the largest clusters."""
    lines: list[str] = []
    for result in (report.target, report.closure):
        if result is None:
            continue
        counted = result.total - len(result.skipped)
        title = "target class" if result.scope == "class" else "whole closure"
        lines.append(f"{title}: {counted} blocks ({result.seconds:.2f} s)")
        for level in result.levels:
            share = level.unique / counted if counted else 0.0
            threshold = {
                "exact": "",
                "lexical": f" (Jaccard >= {result.params.lexical_threshold:.2f})",
                "structural": f" (Jaccard >= {result.params.structural_threshold:.2f})",
            }[level.level]
            lines.append(
                f"  {level.level:<10} {level.unique:6d} unique ({share:6.1%}), "
                f"{len(level.clusters)} clusters{threshold}"
            )
        final = result.levels[-1]
        for cluster in final.clusters[:members]:
            shown = ", ".join(cluster.members[:4])
            more = f" (+{len(cluster.members) - 4} more)" if len(cluster.members) > 4 else ""
            lines.append(f"    {len(cluster.members)}: {shown}{more}")
        if result.skipped:
            lines.append(f"  skipped (does not parse): {', '.join(result.skipped)}")
    return "\n".join(lines)
