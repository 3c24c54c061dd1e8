"""What including one unit adds to any closure, computed once per unit and index."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnrag.extract.needs import UnitKey, UnitScanner, Use
from nnrag.extract.releases import release_mismatch
from nnrag.index.symbols import Resolution, Symbols
from nnrag.model import Category, ImportBinding, ModuleInfo, Unit

if TYPE_CHECKING:
    from nnrag.index.build import Index

__all__ = ["Effect", "Located", "SortKey", "UnitEffect", "unbound_in_source"]

SortKey = tuple[str, str, int, int]
"""(source, module, first line, unit index): file order."""

_RESOURCE_DUNDERS = frozenset({"__file__", "__path__", "__loader__", "__spec__", "__cached__"})
_SETS_ITSELF = re.compile(
    r"^\s+(?:setattr\(\s*(?:sys\.modules\[__name__\]|\w*mod\w*)\s*,|globals\(\)\s*\[.+\]\s*=)",
    re.M,
)
"""A function body line that sets a name on its own module (``setattr(thismod, api, f)``
with ``thismod = sys.modules[__name__]``, ``globals()[name] = f``)."""
_MISSING: Mapping[str, Category] = {
    "unresolved": "unresolved-name",
    "cycle": "unresolved-name",
    "native": "native-op",
    "not-indexed": "source-import",
}


Located = tuple[Category, str, str]
"""(category, location, message) of a problem; the walk adds the dependency path."""


@dataclass(frozen=True, slots=True)
class Effect:
    """What including one unit adds to any closure: it does not depend on the block, so it
    is computed once per unit and index and replayed by every walk that reaches the unit."""

    deps: tuple[tuple[UnitKey, ModuleInfo, Unit], ...]
    """Units to include, in the order the walk queues them."""
    load: frozenset[UnitKey]
    """Units that must run before this one (its load-time reads)."""
    call: frozenset[UnitKey]
    """Units its functions use when called."""
    imports: tuple[tuple[tuple[str, str], tuple[ModuleInfo, ImportBinding]], ...]
    references: tuple[tuple[tuple[str, str], tuple[str, str]], ...]
    builtins: tuple[tuple[str, str], ...]
    members: tuple[tuple[str, str, tuple[str, str] | None], ...]
    """(module used as an object, attr, what it denotes); ``None``: the module only."""
    problems: tuple[Located, ...]
    sort_key: SortKey
    stored: tuple[tuple[UnitKey, str], ...] = ()
    """Functions among ``deps`` only stored in an attribute, with it (a stand-in does
    until the closure reads that attribute: :mod:`nnrag.extract.stored`)."""
    tested: frozenset[UnitKey] = frozenset()
    """Classes among ``deps`` only tested against or named in annotations (a stand-in
    does, unless another unit of the closure needs the class itself)."""
    typed: frozenset[UnitKey] = frozenset()
    """Type aliases among ``deps`` read as a method's parameter annotation (not a type test):
    their classes are carried for real (``Summary.typed``)."""
    alias: bool = False
    """The unit is a type alias: its ``tested`` classes are real once it is ``typed``."""
    imported: tuple[tuple[UnitKey, str], ...] = ()
    """Classes and functions among ``deps`` only imported under a guard, with the name the
    import binds in the unit's module (a stand-in does until the closure reads that name)."""


def unbound_in_source(
    symbols: Symbols, info: ModuleInfo, name: str, found: Resolution, *, load: bool
) -> bool:
    """Whether ``name``, read by code of ``info`` only when a function runs, is bound nowhere
    in ``info`` itself (nothing binds it, no star import could: those of indexed modules
    export no such name): the original module imports and raises ``NameError`` only where
    that read runs (a name a branch of research code never imports), so the block keeps the
    read as the original has it."""
    return (
        not load
        and found.kind == "missing"
        and found.reason == "unresolved"
        and found.name == name
        and found.module is not None
        and (found.module.source, found.module.module) == (info.source, info.module)
        and symbols.stars_known(info)
    )


class UnitEffect:
    """Computes the :class:`Effect` of one unit (what ``resolve``'s walk replays)."""

    def __init__(  # noqa: PLR0917 (one unit of one index, as the walk holds them)
        self,
        index: Index,
        symbols: Symbols,
        scanner: UnitScanner,
        key: UnitKey,
        info: ModuleInfo,
        unit: Unit,
    ) -> None:
        self.index = index
        self.symbols = symbols
        self.scanner = scanner
        self.key = key
        self.info = info
        self.unit = unit
        self.deps: list[tuple[UnitKey, ModuleInfo, Unit]] = []
        self.load: set[UnitKey] = set()
        self.call: set[UnitKey] = set()
        self.imports: list[tuple[tuple[str, str], tuple[ModuleInfo, ImportBinding]]] = []
        self.references: list[tuple[tuple[str, str], tuple[str, str]]] = []
        self.members: list[tuple[str, str, tuple[str, str] | None]] = []
        self.problems: list[Located] = []
        self._words: frozenset[str] | None = None
        self.escaped: set[str] = set()
        """Modules whose object escapes (``vars(m)``): all their public names are members."""

    def build(self) -> Effect:
        info, key = self.info, self.key
        summary = self.scanner.summary(info, self.unit, self.symbols)
        for home, unit, load in summary.deps:
            dep = self._include(home, unit)
            if dep != key:
                (self.load if load else self.call).add(dep)
        self.imports.extend((local, (home, binding)) for local, home, binding in summary.imports)
        self.references.extend(summary.references)
        for use in summary.others:
            self._use(use)
        for chain, line in self.unit.local_reads:
            self._local_read(chain, line)
        for finding, registry in summary.findings:
            if registry is not None:
                for registration in registry.registrations:
                    self.call.add(self._include(registry.home, registration))
                if not registry.elsewhere:
                    continue  # every registration is in the home module, now inlined
            self._problem(finding.category, finding.message, line=finding.line, col=finding.col)
        return Effect(
            deps=tuple(self.deps),
            load=frozenset(self.load),
            call=frozenset(self.call),
            imports=tuple(self.imports),
            references=tuple(self.references),
            builtins=summary.builtins,
            members=tuple(self.members),
            problems=tuple(dict.fromkeys(self.problems)),
            sort_key=(key[0], key[1], self.unit.start_line, self.unit.index),
            stored=summary.stored,
            tested=summary.tested,
            typed=summary.typed,
            alias=summary.alias,
            imported=summary.imported,
        )

    def _include(self, info: ModuleInfo, unit: Unit) -> UnitKey:
        key = (info.source, info.module, unit.index)
        self.deps.append((key, info, unit))
        return key

    def _use(self, use: Use) -> None:
        """A read that becomes a problem (see :meth:`UnitScanner.summary`)."""
        info = self.info
        found = use.found
        if found.kind == "dunder":
            if found.name in _RESOURCE_DUNDERS:
                self._problem(
                    "resource-file",
                    f"reads {use.chain!r}: a file next to the source module, absent from the "
                    "standalone block (ship the resource or pass its path in)",
                    name=use.root,
                    line=use.line,
                )
        elif found.kind == "module" and found.module is not None:
            # an internal module used as an object becomes a namespace of inlined members
            self.members.append((found.module.module, "", None))
            if not use.line:  # the chain denotes the module object itself: it escapes
                self.references.append(((info.module, use.prefix), (found.module.module, "")))
                self._module_object((info, use.chain), found.module, (), load=use.load)
        elif found.kind == "missing" and unbound_in_source(
            self.symbols, info, use.root, found, load=use.load
        ):
            self._problem(
                "runtime-error",
                f"name {use.root!r} is bound nowhere in {info.path}, the original module: the "
                "block keeps the read as written and raises NameError where it runs, as the "
                "original does",
                name=use.root,
                line=use.line,
            )
        elif found.kind == "missing":
            self._missing(use.chain, found, name=use.root, line=use.line)

    # -- modules used as objects -------------------------------------------------------------

    def _local_read(self, chain: str, line: int) -> None:
        """A chain rooted at a name a local import binds (``aggr.MultiAggregation``)."""
        parts = chain.split(".")
        binding = next(
            (b for b in self.unit.local_imports if b.name == parts[0] and b.line == line),
            None,
        )
        if binding is None or self.index.source_of_module(binding.module) is None:
            return
        found = self.symbols.follow(self.info, binding, parts[0], ())
        if found.kind == "module" and found.module is not None:
            load = self._in_class_body(line)
            self._module_object((self.info, chain), found.module, tuple(parts[1:]), load=load)

    def _in_class_body(self, line: int) -> bool:
        """Whether the import at ``line`` runs at load time (directly in a class body)."""
        unit = self.unit
        if unit.kind != "class":
            return False
        tree = self.scanner.tree(self.info, unit)
        relative = line - unit.start_line + 1
        return tree is not None and any(
            isinstance(node, ast.ClassDef)
            and any(
                isinstance(stmt, ast.Import | ast.ImportFrom) and stmt.lineno == relative
                for stmt in node.body
            )
            for node in ast.walk(tree)
        )

    def _module_object(
        self,
        where: tuple[ModuleInfo, str],
        module: ModuleInfo,
        rest: tuple[str, ...],
        *,
        load: bool,
    ) -> None:
        """``module`` used as an object: its attribute ``rest[0]`` (then ``rest[1:]`` inside
        it when that is a submodule) is a member; with no ``rest`` the object escapes, and
        every name of its run-time namespace (:meth:`Symbols.namespace`) is a member."""
        self.members.append((module.module, "", None))
        if rest:
            self._member(where, module, rest[0], rest[1:], load=load, escape=False)
            return
        if module.module in self.escaped:
            return
        _, chain = where
        lookups = self.scanner.lookups(self.info, self.unit, chain)
        if lookups is not None:  # only ``getattr(m, name)``/``hasattr(m, name)``: no escape
            names, dynamic = lookups
            if dynamic:  # a computed name: the names the strings the unit reads give it
                keyed = sorted(self.symbols.attributes(module, self._key_words()))
                names, dynamic = (*names, *keyed), not keyed
            for name in dict.fromkeys(names):
                self._member(where, module, name, (), load=load, escape=False)
            if dynamic:
                self._problem(
                    "dynamic-registry",
                    f"getattr({chain}, ...) looks a name up in module {module.module} at run "
                    "time, and no string of the code names one of its definitions; only the "
                    "names the closure reads are inlined",
                    name=chain.split(".", 1)[0],
                )
            return
        self.escaped.add(module.module)
        for name in sorted(self.symbols.namespace(module)):
            self._member(where, module, name, (), load=load, escape=True)

    def _key_words(self) -> frozenset[str]:
        """The strings a computed name can come from: the unit's own, and those of the
        module-level tables it reads (``getattr(m, TABLE[key][0])``)."""
        if self._words is None:
            words = set(self.scanner.words(self.info, self.unit))
            for _, info, unit in self.deps:
                if unit.kind == "assign":
                    words |= self.scanner.words(info, unit)
            self._words = frozenset(words)
        return self._words

    def _member(
        self,
        where: tuple[ModuleInfo, str],
        module: ModuleInfo,
        attr: str,
        rest: tuple[str, ...],
        *,
        load: bool,
        escape: bool,
    ) -> None:
        found = self.symbols.lookup(module, (attr,))
        home = found.module
        if found.kind == "definition" and home is not None:
            for unit in found.units:
                dep = self._include(home, unit)
                if dep != self.key:
                    (self.load if load else self.call).add(dep)
            self.members.append((module.module, attr, (home.module, found.name)))
        elif found.kind == "external" and home is not None and found.binding is not None:
            if escape and attr not in (module.all_names or ()):
                return  # without ``__all__``, the public names are the module's definitions
            self.imports.append(((home.module, found.name), (home, found.binding)))
            self.members.append((module.module, attr, (home.module, found.name)))
        elif found.kind == "module" and home is not None:
            if escape and attr not in (module.all_names or ()):
                return  # submodules enumerate only when ``__all__`` lists them
            self.members.append((module.module, attr, (home.module, "")))
            self._module_object(where, home, rest, load=load)
        elif found.kind == "dunder" and attr == "__name__":
            self.members.append((module.module, attr, (module.module, attr)))
        elif found.kind == "dunder" and attr in _RESOURCE_DUNDERS and not escape:
            _, chain = where
            self._problem(
                "resource-file",
                f"reads {chain!r}: a file of the source module, absent from the standalone "
                "block (ship the resource or pass its path in)",
                name=chain.split(".", 1)[0],
            )
        elif found.kind == "missing" and not escape:
            _, chain = where
            self._missing(chain, found, name=chain.split(".", 1)[0])

    def _missing(self, chain: str, found: Resolution, *, name: str, line: int = 0) -> None:
        info = self.info
        reason = found.reason or "unresolved"
        category = _MISSING[reason]
        if reason == "native":
            message = f"{chain!r} comes from {found.target}, a compiled extension of the source"
        elif reason == "not-indexed":
            message = f"{chain!r} comes from {found.target}, which is not indexed"
        elif found.binding is not None and found.target:
            message = self._absent_import(chain, found.target)
        elif mismatch := release_mismatch(self.index, self.symbols, info, chain, found):
            message = mismatch
        else:
            message = f"name {chain!r} is not defined anywhere"
            if found.module is not None and found.module.module != info.module:
                message += f" (looked up in {found.module.module})"
                message += self._set_at_run_time(found.module)
        self._problem(category, message, name=name, line=line)

    def _absent_import(self, chain: str, target: str) -> str:
        """Why an import of ``target`` (``pkg.mod.name``) finds nothing: no such module, or a
        module that binds no such name as written (one that sets names on itself when a
        function of it runs, as a backend loader does, is said to)."""
        parent, _, name = target.rpartition(".")
        home = self.index.module(parent, prefer=self.info.source) if parent else None
        if home is None:
            return f"{chain!r} is imported from {target}, which does not exist"
        message = f"{chain!r} is imported from {parent}, which binds no {name!r} as written"
        return message + self._set_at_run_time(home)

    def _set_at_run_time(self, home: ModuleInfo) -> str:
        """A note when ``home`` sets names on itself as a function of it runs (a backend
        loader's ``setattr(thismod, api, ...)``): what the index cannot see."""
        if not _SETS_ITSELF.search(self.index.text(home)):
            return ""
        return (
            f" ({home.module} sets names on itself when one of its functions runs, by setattr "
            "or globals(): nnrag cannot tell which, so the block cannot be closed this way; "
            "vendor those names by hand)"
        )

    def _problem(
        self, category: Category, message: str, *, name: str = "", line: int = 0, col: int = 0
    ) -> None:
        if not line:
            line, col = self.scanner.position(self.info, self.unit, name)
        self.problems.append((category, f"{self.info.path}:{line}:{col or 1}", message))
