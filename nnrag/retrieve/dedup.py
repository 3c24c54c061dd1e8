"""Three-level de-duplication of block code: exact, lexical (MinHash/LSH), structural (AST)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from nnrag.retrieve.features import (
    Vocabulary,
    code_tokens,
    exact_key,
    fingerprint_hashes,
    jaccard,
    shingle_hashes,
    sorted_unique,
)

if TYPE_CHECKING:
    from datasketch import MinHash

    from nnrag.index.build import Index
    from nnrag.model import BlockRef, Closure, ImportBinding

Level = Literal["exact", "lexical", "structural"]
LEVELS: tuple[Level, ...] = ("exact", "lexical", "structural")
Scope = Literal["class", "closure"]


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
    """Verified duplicate pairs at this level that joined two clusters (merges)."""
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


# --------------------------------------------------------------------------- features


@dataclass(frozen=True, slots=True)
class _Part:
    """Features of one piece of code (a unit), computed once however many blocks include it."""

    key: str
    lexical: NDArray[np.uint64]
    structural: NDArray[np.uint64]
    lexical_sketch: MinHash
    structural_sketch: MinHash


class FeatureCache:
    """Per-part feature cache with datasketch MinHash sketches.

    MinHash(A | B) is MinHash(A) merged with MinHash(B) (element-wise minimum), so a block
    made of several parts (a closure: imports and units) is sketched from its parts' sketches.
    """

    def __init__(self, params: DedupParams) -> None:
        from datasketch import MinHash

        self.params = params
        self.vocabulary = Vocabulary()
        self.parts: dict[str, _Part | None] = {}
        self.template = MinHash(num_perm=params.num_perm, seed=params.seed, hashfunc=int)

    def sketch(self, values: NDArray[np.uint64]) -> MinHash:
        from datasketch import MinHash

        # The features are already well-mixed 64-bit hashes: their top 32 bits are the
        # 32-bit input datasketch's default scheme expects from its own hash function.
        sketch = MinHash(
            num_perm=self.params.num_perm,
            seed=self.params.seed,
            hashfunc=int,
            permutations=self.template.permutations,
            scheme=self.template.scheme,
        )
        sketch.update_batch((values >> np.uint64(32)).tolist())
        return sketch

    def part(self, code: str) -> _Part | None:
        if code in self.parts:
            return self.parts[code]
        try:
            tree, tokens = code_tokens(code)
        except (SyntaxError, ValueError, RecursionError):
            self.parts[code] = None
            return None
        lexical = shingle_hashes(tokens, self.params.shingle, self.vocabulary)
        structural = fingerprint_hashes(tree, self.params.min_subtree)
        text = " ".join(tokens)
        found = self.parts[code] = _Part(
            key=exact_key(text),
            lexical=lexical,
            structural=structural,
            lexical_sketch=self.sketch(lexical),
            structural_sketch=self.sketch(structural),
        )
        return found


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


@dataclass(slots=True)
class _Doc:
    parts: list[_Part]
    key: str
    union: dict[str, NDArray[np.uint64]] = field(default_factory=dict)

    def features(self, level: str) -> NDArray[np.uint64]:
        found = self.union.get(level)
        if found is None:
            arrays = [getattr(part, level) for part in self.parts]
            found = arrays[0] if len(arrays) == 1 else sorted_unique(np.concatenate(arrays))
            self.union[level] = found
        return found

    def sketch(self, level: str) -> MinHash:
        from datasketch import MinHash

        sketches: list[MinHash] = [getattr(part, f"{level}_sketch") for part in self.parts]
        return sketches[0] if len(sketches) == 1 else MinHash.union(*sketches)


def _merge_near(
    docs: Mapping[str, _Doc],
    level: str,
    components: _Components,
    *,
    threshold: float,
    params: DedupParams,
) -> int:
    """Merge pairs with Jaccard >= threshold (MinHash LSH candidates, verified by exact
    Jaccard); return how many merges joined two clusters.

    A candidate pair already in one cluster is not verified: it cannot change the clusters.
    """
    from datasketch import MinHashLSH

    try:
        lsh = MinHashLSH(threshold=threshold, num_perm=params.num_perm, weights=params.lsh_weights)
    except ValueError:  # thresholds near 1.0 leave datasketch fewer than 2 bands
        bands = 4
        lsh = MinHashLSH(num_perm=params.num_perm, params=(bands, params.num_perm // bands))
    sketches: dict[str, MinHash] = {}
    for key in sorted(docs):
        sketch = docs[key].sketch(level)
        lsh.insert(key, sketch, check_duplication=False)
        sketches[key] = sketch
    merges = 0
    for key in sorted(docs):
        for other in sorted(lsh.query(sketches[key])):
            if other <= key or components.find(key) == components.find(other):
                continue
            if jaccard(docs[key].features(level), docs[other].features(level)) >= threshold:
                components.union(key, other)
                merges += 1
    return merges


# --------------------------------------------------------------------------- entry points


def dedup(
    codes: Mapping[str, str | Sequence[str]],
    *,
    scope: Scope = "class",
    params: DedupParams | None = None,
    cache: FeatureCache | None = None,
) -> DedupResult:
    """De-duplicate blocks at the three levels, cumulatively.

    Each block is a code string, or a sequence of code parts (a closure: its imports and each
    inlined unit); a block's features are the union of its parts' features, and each distinct
    part is analysed once (per ``cache``: pass the same one to share work between calls with
    the same parameters).
    """
    params = params or DedupParams()
    import datasketch  # noqa: F401  (imported before the clock starts: a one-off cost)

    started = time.perf_counter()
    features = cache if cache is not None and cache.params == params else FeatureCache(params)
    docs: dict[str, _Doc] = {}
    skipped: list[str] = []
    for block_id in sorted(codes):
        code = codes[block_id]
        pieces = [code] if isinstance(code, str) else list(code)
        parts = [features.part(piece) for piece in pieces]
        present = [part for part in parts if part is not None]
        if len(present) != len(parts) or not present:
            skipped.append(block_id)
            continue
        key = (
            present[0].key
            if len(present) == 1
            else exact_key("\n".join(part.key for part in present))
        )
        docs[block_id] = _Doc(parts=present, key=key)
    components = _Components(docs)
    levels: list[LevelResult] = []

    by_key: dict[str, str] = {}
    exact_pairs = 0
    for block_id, doc in docs.items():
        if doc.key in by_key:
            components.union(by_key[doc.key], block_id)
            exact_pairs += 1
        else:
            by_key[doc.key] = block_id
    levels.append(_snapshot("exact", components, exact_pairs))

    # Exact duplicates share every feature: only one representative per exact group goes on.
    representatives = {block_id: docs[block_id] for block_id in sorted(by_key.values())}
    for level, threshold in (
        ("lexical", params.lexical_threshold),
        ("structural", params.structural_threshold),
    ):
        merges = _merge_near(representatives, level, components, threshold=threshold, params=params)
        levels.append(_snapshot(level, components, merges))  # type: ignore[arg-type]  # level is one of the two Level literals of the loop above

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


def closure_parts(index: Index, closure: Closure) -> list[str]:
    """The closure's code as it is in its sources: its imports, then each unit's original text.

    What emission would write minus the provenance header and collision renames (which do
    not change what is compared here), without paying for the LibCST rewrite.
    """
    imports = "\n".join(sorted({_import_line(binding) for binding in closure.imports}))
    parts = [imports] if imports else []
    texts: dict[tuple[str, str], list[str]] = {}
    for ref in closure.units:
        info = index.module(ref.module, prefer=ref.source)
        if info is None:
            continue
        key = (info.source, info.module)
        if key not in texts:
            texts[key] = index.text(info).splitlines()
        unit = info.units[ref.index]
        parts.append("\n".join(texts[key][unit.start_line - 1 : unit.end_line]) + "\n")
    return parts


def resolved_closure_code(index: Index) -> Callable[[BlockRef], list[str] | None]:
    """A ``closure_code`` for :func:`dedup_blocks` from :func:`nnrag.extract.resolve.resolve`."""
    from nnrag.errors import NnragError
    from nnrag.extract.resolve import resolve

    def code(block: BlockRef) -> list[str] | None:
        try:
            return closure_parts(index, resolve(index, block))
        except NnragError:
            return None

    return code


def dedup_blocks(
    index: Index,
    blocks: Sequence[BlockRef],
    *,
    closure_code: Callable[[BlockRef], str | Sequence[str] | None] | None = None,
    params: DedupParams | None = None,
) -> DedupReport:
    """De-duplicate blocks on their class alone and, given ``closure_code``, on their closure.

    ``closure_code`` returns a block's closure as code (the emitted file, whose header is only
    comments) or as parts (:func:`resolved_closure_code`), or ``None`` when it has none.
    """
    targets: dict[str, str] = {}
    for block in blocks:
        code = class_code(index, block)
        if code is not None:
            targets[block.id] = code
    cache = FeatureCache(params or DedupParams())
    target = dedup(targets, scope="class", params=params, cache=cache)
    closure = None
    if closure_code is not None:
        closures: dict[str, str | Sequence[str]] = {}
        for block in blocks:
            parts = closure_code(block)
            if parts is not None:
                closures[block.id] = parts
        closure = dedup(closures, scope="closure", params=params, cache=cache)
    return DedupReport(target=target, closure=closure)


class IndexedBlocks(Protocol):
    """What :func:`dedup_workspace` needs of the workspace (``nnrag.workspace.Workspace``)."""

    def index(self) -> Index: ...
    def blocks(self) -> tuple[BlockRef, ...]: ...


def dedup_workspace(
    workspace: IndexedBlocks, *, closures: bool = True, params: DedupParams | None = None
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
                "merges": level.pairs,
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
