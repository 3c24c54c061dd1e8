"""Module-level patches: ``obj.attr = value`` statements that change an object on import."""

from __future__ import annotations

from dataclasses import dataclass

from nnrag.extract.needs import UnitScanner
from nnrag.extract.syntax import patched_attributes
from nnrag.index.symbols import Symbols
from nnrag.model import ModuleInfo, Unit

__all__ = ["Patch", "PatchIndex"]


@dataclass(frozen=True, slots=True)
class Patch:
    """One patch unit: the attributes it sets, and the internal definitions it sets them on
    (empty when every receiver is an external object such as ``logging.Logger``)."""

    unit: Unit
    attributes: frozenset[str]
    receivers: frozenset[tuple[str, str, int]]


class PatchIndex:
    """The patches of each module (memoized per index).

    A library can add a method to a class it does not own (``logging.Logger.warning_once
    = warning_once``): the statement binds no name, so nothing reads it, but code that calls
    ``logger.warning_once(...)`` works only once the module that patches has run.
    """

    def __init__(self, symbols: Symbols, scanner: UnitScanner) -> None:
        self.symbols = symbols
        self.scanner = scanner
        self._patches: dict[tuple[str, str], tuple[Patch, ...]] = {}

    def of(self, info: ModuleInfo) -> tuple[Patch, ...]:
        """The units of ``info`` that only set attributes on objects it does not bind there."""
        key = (info.source, info.module)
        found = self._patches.get(key)
        if found is None:
            found = self._patches[key] = tuple(self._find(info))
        return found

    def _find(self, info: ModuleInfo) -> list[Patch]:
        out: list[Patch] = []
        for unit in info.units:
            if unit.kind != "assign" or unit.binds or unit.type_checking:
                continue
            tree = self.scanner.tree(info, unit)
            pairs = () if tree is None else patched_attributes(tree)
            receivers: set[tuple[str, str, int]] = set()
            for receiver, _ in pairs:
                found = self.symbols.lookup(info, receiver, before=unit.start_line)
                if found.kind == "definition" and found.module is not None:
                    home = found.module
                    receivers.update((home.source, home.module, u.index) for u in found.units)
                elif found.kind != "external":
                    break  # a module of the source, a missing name: not a patch we carry
            else:
                if pairs:
                    attributes = frozenset(attr for _, attr in pairs)
                    out.append(Patch(unit, attributes, frozenset(receivers)))
        return out
