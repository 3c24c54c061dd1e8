"""Synthetic units: one part of a unit on its own lines (a method of a plain class, an entry of
a string table) and the rest of the unit without them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from nnrag.model import ImportBinding, Unit

__all__ = ["SPREAD", "part_index", "part_of", "rest_of"]

SPREAD = 4096
"""Synthetic unit indexes: ``-(index * SPREAD + number + 1)`` (never a real unit's index)."""


def part_index(unit: Unit, number: int) -> int:
    """The index of part ``number`` of ``unit`` (``0``: the rest of the unit)."""
    return -(unit.index * SPREAD + number + 1)


def part_of(unit: Unit, index: int, span: tuple[int, int], mine: Collection[str]) -> Unit:
    """The synthetic unit of the lines ``span`` of ``unit``: the reads of ``mine`` (the chains
    it reads that the rest of the unit does not), and the local imports on its lines."""

    def inside(binding: ImportBinding) -> bool:
        return span[0] <= binding.line <= span[1]

    return replace(
        unit,
        index=index,
        kind="def",
        start_line=span[0],
        end_line=span[1],
        binds=(),
        load_reads=tuple(c for c in unit.load_reads if c in mine),
        call_reads=tuple(c for c in unit.call_reads if c in mine),
        annotation_reads=tuple(c for c in unit.annotation_reads if c in mine),
        imports=(),
        classes=(),
        local_imports=tuple(b for b in unit.local_imports if inside(b)),
        local_reads=tuple(r for r in unit.local_reads if span[0] <= r[1] <= span[1]),
    )


def rest_of(
    unit: Unit, index: int, spans: Sequence[tuple[int, int]], theirs: Collection[str]
) -> Unit:
    """``unit`` without its parts on ``spans``: without the reads only they make (``theirs``)
    and the local imports on their lines."""

    def outside(line: int) -> bool:
        return not any(first <= line <= last for first, last in spans)

    return replace(
        unit,
        index=index,
        load_reads=tuple(c for c in unit.load_reads if c not in theirs),
        call_reads=tuple(c for c in unit.call_reads if c not in theirs),
        annotation_reads=tuple(c for c in unit.annotation_reads if c not in theirs),
        local_imports=tuple(b for b in unit.local_imports if outside(b.line)),
        local_reads=tuple(r for r in unit.local_reads if outside(r[1])),
    )
