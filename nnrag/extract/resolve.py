"""Resolution: the exact dependency closure of a block, its order, flat-name renames, problems."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nnrag.diagnostics import closure_problem
from nnrag.errors import ExtractionError
from nnrag.extract.effects import Effect, Located, SortKey, UnitEffect
from nnrag.extract.methods import Method, MethodIndex
from nnrag.extract.needs import UnitKey, UnitScanner, scanner_for
from nnrag.extract.order import CallClosure, Components, runs_at_load, topological
from nnrag.extract.patches import PatchIndex
from nnrag.extract.registries import Carrier, registries_for
from nnrag.extract.renames import planner_for
from nnrag.extract.tables import value_strings
from nnrag.index.symbols import Symbols, symbols_for
from nnrag.model import (
    BlockRef,
    Closure,
    ImportBinding,
    ModuleInfo,
    Registration,
    Unit,
    UnitRef,
)

if TYPE_CHECKING:
    from nnrag.index.build import Index


def resolve(index: Index, block: BlockRef, *, also: Iterable[tuple[str, str]] = ()) -> Closure:
    """The closure of ``block``: internal units to inline, external imports, renames, problems.

    ``also``: ``(module, name)`` of further definitions to include with their closures (what
    ``nnrag check --fix`` inlines when a vendored block starts to use them); each must resolve
    to a definition in an indexed module, else :class:`ExtractionError`.
    """
    walk = _Walk(index, symbols_for(index), scanner_for(index), block)
    walk.also = tuple(also)
    return walk.run()


@dataclass(slots=True)
class _Included:
    info: ModuleInfo
    unit: Unit
    parent: UnitKey | None
    effect: Effect | None = None


@dataclass(slots=True)
class _Memo:
    """Per-index memos of the walk (they live as long as the index)."""

    effects: dict[UnitKey, Effect] = field(default_factory=dict)
    needs: dict[UnitKey, frozenset[UnitKey]] = field(default_factory=dict)
    previous: dict[UnitKey, frozenset[UnitKey]] = field(default_factory=dict)
    components: dict[UnitKey, Components] = field(default_factory=dict)
    values: dict[UnitKey, frozenset[str]] = field(default_factory=dict)
    methods: MethodIndex | None = None
    patches: PatchIndex | None = None


def _memo_for(index: Index) -> _Memo:
    return index.analyses.of(_Memo, _Memo)


class _Walk:
    """One resolution: a worklist over units, following every chain they read."""

    def __init__(
        self, index: Index, symbols: Symbols, scanner: UnitScanner, block: BlockRef
    ) -> None:
        self.index = index
        self.symbols = symbols
        self.scanner = scanner
        self.memo = _memo_for(index)
        self.block = block
        self.units: dict[UnitKey, _Included] = {}
        self.queue: list[UnitKey] = []
        self.imports: dict[tuple[str, str], tuple[ModuleInfo, ImportBinding]] = {}
        self.references: dict[tuple[str, str], tuple[str, str]] = {}
        self.builtins: set[tuple[str, str]] = set()
        self.problems: dict[Located, UnitKey] = {}
        """Each problem, with the unit whose inclusion found it first."""
        self.namespaces: dict[str, dict[str, tuple[str, str]]] = {}
        """Internal modules used as objects -> attr -> (module, name) it denotes."""
        self.also: tuple[tuple[str, str], ...] = ()
        """Further ``(module, name)`` roots besides the block (see :func:`resolve`)."""
        if self.memo.methods is None:
            self.memo.methods = MethodIndex(symbols, scanner)
        self.methods = self.memo.methods
        self.pending: dict[UnitKey, dict[str, Method]] = {}
        """Plain classes (:mod:`nnrag.extract.methods`) -> their methods not kept yet."""
        self.parts: dict[UnitKey, list[Effect]] = {}
        """Plain classes -> the effects of their always-kept part and of each kept method."""
        self.attributes: set[str] = set()
        """Attribute names and quoted words of everything kept so far."""
        self.whole: set[UnitKey] = set()
        """Plain classes some class that is not plain derives from: kept whole."""
        self.tested: dict[UnitKey, _Included] = {}
        """Classes only tested against so far (``isinstance``, annotations)."""
        self.stubs: set[UnitKey] = set()
        """Classes nothing but type tests reach: emitted as stand-ins."""
        self.typed: set[UnitKey] = set()
        """Type aliases read as a method's parameter annotation (directly or through another
        such alias): the classes they name are what the block receives, carried for real."""
        self.family: dict[UnitKey, UnitKey] = {}
        """Plain class -> a class it derives from or that derives from it (union-find)."""
        self.own: dict[UnitKey, set[str]] = {}
        """Family root -> attributes its classes read on ``self``/``cls``."""
        self._words: tuple[tuple[int, int], str] = ((-1, -1), "")
        """(sizes it was built at, every word of the closure joined): see :meth:`_mentioned`."""
        self.tables: dict[UnitKey, int] = {}
        """String tables (:mod:`nnrag.extract.tables`) -> how many prunable entries they have."""
        self.loaded: set[str] = set()
        """Attribute names (and quoted words) the kept code scanned so far reads
        (:mod:`nnrag.extract.stored`)."""
        self.unscanned: list[tuple[ModuleInfo, Unit, tuple[tuple[int, int], ...]]] = []
        """Kept code not scanned for :attr:`loaded` yet (a unit, the lines it leaves out):
        scanned only when a function waits on an attribute its text spells."""
        self.waiting: dict[str, dict[UnitKey, _Included]] = {}
        """Attribute -> functions only stored in it so far (carried once it is read)."""
        self.unread: dict[tuple[str, str], dict[UnitKey, _Included]] = {}
        """(module, name) -> classes and functions only imported under a guard as that name
        so far (carried once code of the closure may read it: :meth:`_read_names`)."""
        self.heard: set[str] = set()
        """Words the kept units spell, each but the names it only imports (see
        :meth:`_read_names`)."""
        self.heard_from: set[UnitKey] = set()
        """Kept units whose words are in :attr:`heard`."""
        self.imported: set[UnitKey] = set()
        """Stand-ins for definitions only imported under a guard, never read."""
        self.unregistered: dict[UnitKey, dict[UnitKey, _Included]] = {}
        """Classes and functions whose registering decorators are left out so far -> what
        only those decorators need (:meth:`RegistryIndex.decorators_only`): carried, with
        the decorators, once the closure holds one of those registries for another reason
        or reaches the registered key."""
        self.keyed: set[UnitKey] = set()
        """Units carried because the closure reaches a key they register: decorators kept."""

    # -- the walk ----------------------------------------------------------------------------

    def run(self) -> Closure:
        info = self.index.module(self.block.module, prefer=self.block.source)
        if info is None or info.source != self.block.source:
            raise ExtractionError(
                f"module {self.block.module} is not in the index; run `nnrag index` again",
                block_id=self.block.id,
            )
        roots = [(info, unit) for unit in self._target_units(info)]
        roots += [pair for module, name in self.also for pair in self._extra_units(module, name)]
        for home, unit in roots:
            key = (home.source, home.module, unit.index)
            if key not in self.units:
                self.units[key] = _Included(info=home, unit=unit, parent=None)
                self.queue.append(key)
        self._drain()
        self._carry_patches()
        self._tables_read_from_outside()
        registrations = self._carry_registrations()
        self._carry_patches()
        self._tables_read_from_outside()
        self._cut_tables()
        self._stand_ins()
        self._combine()
        order = self._order()
        renames = planner_for(self.index, self.symbols, self.scanner).renames(
            self.block, order, self.units, builtins=self.builtins, imports=self.imports
        )
        imports = tuple(
            binding
            for _, (_, binding) in sorted(
                self.imports.items(), key=lambda item: (item[0][0], item[1][1].line, item[0][1])
            )
        )
        problems = sorted(
            (
                closure_problem(category, message, where=where, dependency_path=self._path(key))
                for (category, where, message), key in self.problems.items()
            ),
            key=lambda p: (p.category, p.location, p.message),
        )
        return Closure(
            block=self.block,
            units=tuple(UnitRef(source=k[0], module=k[1], index=k[2]) for k in order),
            imports=imports,
            renames=renames,
            problems=tuple(problems),
            references=dict(sorted(self.references.items())),
            namespaces={
                module: tuple(sorted((attr, *target) for attr, target in members.items()))
                for module, members in sorted(self.namespaces.items())
            },
            registrations=registrations,
            pruned={
                key: tuple(sorted(waiting)) for key, waiting in self.pending.items() if waiting
            },
            stand_ins=tuple(sorted(self.stubs)),
            unread=tuple(sorted(self.imported)),
            unregistered=tuple(sorted(self.unregistered)),
        )

    def _carry_registrations(self) -> tuple[Registration, ...]:
        """Add the registrations of every type string the closure reaches, to a fixed point
        (:class:`~nnrag.extract.registries.Carrier`); report the config type strings that
        nothing registers."""
        registries = registries_for(self.index, self.scanner)
        if not registries.family_of:
            return ()
        carrier = Carrier(registries)
        while True:
            added = False
            for registration, parent in carrier.step(self.units):
                added = self._add_registration(registration, parent) or added
            if not added:
                break
            self._drain()
        for key, where, text in carrier.unregistered(self.units):
            problem: Located = (
                "dynamic-registry",
                where,
                f"type string {text!r} is registered nowhere in the indexed sources "
                "(a registration made at run time is not inlined): building it fails "
                "unless it is registered by the caller",
            )
            self.problems.setdefault(problem, key)
        return carrier.registrations()

    def _carry_patches(self) -> None:
        """Add, to a fixed point, each patch (``logging.Logger.warning_once = f``,
        :mod:`nnrag.extract.patches`) of a module the closure carries units of, whose
        attribute the closure reads and whose receiver is external or already carried."""
        if self.memo.patches is None:
            self.memo.patches = PatchIndex(self.symbols, self.scanner)
        patches = self.memo.patches
        while True:
            modules: dict[tuple[str, str], tuple[UnitKey, ModuleInfo]] = {}
            for key, entry in self.units.items():
                modules.setdefault((key[0], key[1]), (key, entry.info))
            added = False
            for parent, info in modules.values():
                for patch in patches.of(info):
                    key = (info.source, info.module, patch.unit.index)
                    if (
                        key in self.units
                        or self.attributes.isdisjoint(patch.attributes)
                        or not patch.receivers <= self.units.keys()
                    ):
                        continue
                    self.units[key] = _Included(info=info, unit=patch.unit, parent=parent)
                    self.queue.append(key)
                    added = True
            if not added:
                return
            self._drain()

    def _tables_read_from_outside(self) -> None:
        """A string table none of whose keys the closure gives as a value (a default, a
        keyword argument, an assigned constant: :func:`~nnrag.extract.tables.value_strings`)
        is read with keys from outside it (a caller's config): it is carried whole."""
        while self.tables:
            values: set[str] = set()
            for key, entry in self.units.items():
                values |= self._values(key, entry.info, entry.unit)
            whole = [
                key
                for key in self.tables
                if key not in self.whole and values.isdisjoint(self._keys(key))
            ]
            if not whole:
                return
            self.whole.update(whole)
            self._drain()

    def _keys(self, key: UnitKey) -> tuple[str, ...]:
        entry = self.units[key]
        members = self.methods.members(entry.info, entry.unit)
        return () if members is None else tuple(m.name for m in members.methods)

    def _values(self, key: UnitKey, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        found = self.memo.values.get(key)
        if found is None:
            tree = self.scanner.tree(info, unit)
            found = self.memo.values[key] = frozenset() if tree is None else value_strings(tree)
        return found

    def _mentioned(self, name: str) -> bool:
        """Whether ``name`` (a string table's key) occurs inside a word of the closure: an
        attribute, a quoted string or a name it defines (keys are often cut out of such
        words, ``re.findall(pattern, type(self).__name__)``, or assembled from them)."""
        version = (len(self.attributes), len(self.units))
        if self._words[0] != version:
            names = {name for entry in self.units.values() for name in entry.unit.binds}
            self._words = (version, "\0".join(self.attributes | names))
        return name in self._words[1]

    def _cut_tables(self) -> None:
        """Say which string tables hold only the entries whose keys the closure mentions."""
        for key, total in self.tables.items():
            dropped = sorted(self.pending.get(key, ()))
            if not dropped:
                continue
            entry = self.units[key]
            shown = ", ".join(repr(name) for name in dropped[:5])
            more = f" and {len(dropped) - 5} more" if len(dropped) > 5 else ""
            problem: Located = (
                "dynamic-registry",
                f"{entry.info.path}:{entry.unit.start_line}:1",
                f"string table {entry.unit.binds[0]} keeps {total - len(dropped)} of {total} "
                "entries that name definitions: those whose keys occur in the block's code; "
                f"a key computed from another word raises KeyError (left out: {shown}{more})",
            )
            self.problems.setdefault(problem, key)

    def _add_registration(self, registration: Registration, parent: UnitKey) -> bool:
        key = (registration.source, registration.module, registration.unit)
        self.keyed.add(key)
        if key in self.units:
            return self._keep_decorators(key)
        info = self.index.module(registration.module, prefer=registration.source)
        if info is None or info.source != registration.source:
            return False
        self.units[key] = _Included(info=info, unit=info.units[registration.unit], parent=parent)
        self.queue.append(key)
        return True

    def _target_units(self, info: ModuleInfo) -> tuple[Unit, ...]:
        for unit in info.units:
            for klass in unit.classes:
                if klass.name == self.block.name and klass.line == self.block.line:
                    return (unit,)
        units = tuple(u for u in info.units if self.block.name in u.binds and not u.type_checking)
        if not units:
            raise ExtractionError(
                f"class {self.block.name} is no longer in {info.path}; run `nnrag index` again",
                block_id=self.block.id,
            )
        return units[-1:]

    def _extra_units(self, module: str, name: str) -> list[tuple[ModuleInfo, Unit]]:
        info = self.index.module(module, prefer=self.block.source)
        found = None if info is None else self.symbols.lookup(info, name)
        if found is None or found.kind != "definition" or found.module is None:
            raise ExtractionError(
                f"{module}.{name} is not a definition in an indexed module", block_id=self.block.id
            )
        return [(found.module, unit) for unit in found.units]

    def _visit(self, key: UnitKey) -> None:
        entry = self.units[key]
        members = self.methods.members(entry.info, entry.unit)
        if members is None:
            effect = entry.effect = self._effect(key, entry.info, entry.unit)
            self.unscanned.append((entry.info, entry.unit, ()))
            self._apply(effect)
            self.attributes |= self.methods.attributes(entry.info, entry.unit)
            if entry.unit.kind == "class":
                self._keep_bases_whole(entry.info, entry.unit)
            return
        always = self._effect((key[0], key[1], members.always.index), entry.info, members.always)
        spans = tuple(span for method in members.methods for span in method.spans)
        self.unscanned.append((entry.info, entry.unit, spans))
        self.parts[key] = [always]
        self._apply(always, parent=key)
        self.attributes |= members.attributes
        self._own(key).update(members.own)
        for home, base in self.methods.internal_bases(entry.info, entry.unit):
            self._join(key, (home.source, home.module, base.index))
        if entry.parent is None:
            self.whole.add(key)  # the block class keeps every method; its bases are pruned
        self.pending[key] = {method.name: method for method in members.methods}
        if members.table:
            self.tables[key] = len(members.methods)

    def _root(self, key: UnitKey) -> UnitKey:
        family = self.family
        while family.get(key, key) != key:
            key = family[key]
        return key

    def _own(self, key: UnitKey) -> set[str]:
        return self.own.setdefault(self._root(key), set())

    def _join(self, key: UnitKey, other: UnitKey) -> None:
        """One family for two plain classes, one deriving from the other: a method reads
        ``self.x``, and ``x`` may be any class of the family's."""
        first, second = self._root(key), self._root(other)
        if first != second:
            self.family[second] = first
            self._own(first).update(self.own.pop(second, ()))

    def _effect(self, key: UnitKey, info: ModuleInfo, unit: Unit) -> Effect:
        """The memoized effect of a unit (or of a part of a plain class: a synthetic unit)."""
        effect = self.memo.effects.get(key)
        if effect is None:
            effect = UnitEffect(self.index, self.symbols, self.scanner, key, info, unit).build()
            self.memo.effects[key] = effect
        return effect

    def _apply(self, effect: Effect, parent: UnitKey | None = None) -> None:
        """Include what ``effect`` adds: its units (queued), imports, names, problems."""
        key = parent or (effect.sort_key[0], effect.sort_key[1], effect.sort_key[3])
        units, queue, tested = self.units, self.queue, effect.tested
        if not effect.alias or key in self.typed:
            for alias in effect.typed:
                self._type(alias)
            if effect.alias:
                tested = frozenset()
        stored = dict(effect.stored)
        imported = dict(effect.imported)
        registering = self._decorators_only(key)
        for dep, home, unit in effect.deps:
            if dep in units:
                continue
            if dep in registering:
                needed = self.unregistered.setdefault(key, {})
                needed.setdefault(dep, _Included(info=home, unit=unit, parent=key))
                continue
            if dep in tested:
                self.tested.setdefault(dep, _Included(info=home, unit=unit, parent=key))
                continue
            attr = stored.get(dep)
            if attr is not None and attr not in self.loaded:
                waiting = self.waiting.setdefault(attr, {})
                waiting.setdefault(dep, _Included(info=home, unit=unit, parent=key))
                continue
            name = imported.get(dep)
            if name is not None and name not in self.heard:
                unread = self.unread.setdefault((key[1], name), {})
                unread.setdefault(dep, _Included(info=home, unit=unit, parent=key))
                continue
            units[dep] = _Included(info=home, unit=unit, parent=key)
            queue.append(dep)
        imports = self.imports
        for local, pair in effect.imports:
            if local not in imports:
                imports[local] = pair
        if effect.references:
            self.references.update(effect.references)
        if effect.builtins:
            self.builtins.update(effect.builtins)
        for module, attr, target in effect.members:
            members = self.namespaces.setdefault(module, {})
            if target is not None:
                members[attr] = target
        for problem in effect.problems:
            self.problems.setdefault(problem, key)

    def _decorators_only(self, key: UnitKey) -> frozenset[UnitKey]:
        """What only the registering decorators of unit ``key`` need, unless it was carried
        for a key it registers (:meth:`RegistryIndex.decorators_only`)."""
        entry = self.units.get(key)
        if entry is None or key in self.keyed or entry.unit.kind not in ("class", "def"):
            return frozenset()
        return registries_for(self.index, self.scanner).decorators_only(entry.info, entry.unit)

    def _type(self, key: UnitKey) -> None:
        """A type alias is read as a method's parameter annotation: the classes it names
        (and those of the aliases it names) are values the block's code receives, whose
        methods it may call: real classes (method by method if plain), not stand-ins.
        An alias visited before is applied again for them."""
        if key in self.typed:
            return
        self.typed.add(key)
        entry = self.units.get(key)
        if entry is None or entry.effect is None:
            return  # not visited yet: ``_apply`` sees it typed
        for alias in entry.effect.typed:
            self._type(alias)
        for dep, home, unit in entry.effect.deps:
            if dep in entry.effect.tested and dep not in self.units:
                self.tested.pop(dep, None)
                self.units[dep] = _Included(info=home, unit=unit, parent=key)
                self.queue.append(dep)

    # -- methods of plain classes ------------------------------------------------------------

    def _drain(self) -> None:
        """Visit the queue, then keep the methods whose names the closure reads, to a fixed
        point."""
        while True:
            while self.queue:
                self._visit(self.queue.pop())
            if (
                not self._keep_methods()
                and not self._scan()
                and not self._read_names()
                and not self._registered_where_held()
            ):
                return

    def _registered_where_held(self) -> bool:
        """Keep the registering decorators of the units whose registry the closure holds
        anyway (they cost a line each there). Whether any unit was carried for them."""
        held = [
            key
            for key, needed in self.unregistered.items()
            if not self.units.keys().isdisjoint(needed)
        ]
        carried = [self._keep_decorators(key) for key in held]  # every one, not the first
        return any(carried)

    def _keep_decorators(self, key: UnitKey) -> bool:
        """Carry what the registering decorators of ``key`` need (see :attr:`unregistered`).
        Whether any unit was carried."""
        carried = False
        for dep, entry in self.unregistered.pop(key, {}).items():
            if dep not in self.units:
                self.units[dep] = entry
                self.queue.append(dep)
                carried = True
        return carried

    def _read_names(self) -> bool:
        """Carry the definitions only imported under a guard whose names kept code may read:
        a kept unit spells the name (in code or a string; the unit that imports it aside),
        or a module of the closure imports it from the importing module. Whether any was
        carried."""
        if not self.unread:
            return False
        for key, entry in self.units.items():
            if key not in self.heard_from:
                self.heard_from.add(key)
                words = self.scanner.spoken(entry.info, entry.unit)
                effect = self.memo.effects.get(key)
                own = {name for _, name in effect.imported} if effect is not None else set()
                self.heard |= words - own if own else words
        importers: set[tuple[str, str | None]] = set()
        for info in {(k[0], k[1]): e.info for k, e in self.units.items()}.values():
            importers |= self.scanner.importers(info)
        carried = False
        for module, name in list(self.unread):
            if (
                name in self.heard
                or (module, name) in importers
                or (module, "*") in importers
                or (module, None) in importers
            ):
                for dep, entry in self.unread.pop((module, name)).items():
                    if dep not in self.units:
                        self.units[dep] = entry
                        self.queue.append(dep)
                        carried = True
        return carried

    def _scan(self) -> bool:
        """Scan the kept code whose text spells an attribute a function waits on (its reads
        go to :attr:`loaded`), and carry the functions stored in the attributes it reads.
        Whether any was carried."""
        if not self.waiting or not self.unscanned:
            return False
        left: list[tuple[ModuleInfo, Unit, tuple[tuple[int, int], ...]]] = []
        for info, unit, without in self.unscanned:
            text = self.scanner.text(info, unit)
            if any(attr in text for attr in self.waiting):
                self.loaded |= self.scanner.loaded(info, unit, without)
            else:
                left.append((info, unit, without))
        self.unscanned = left
        carried = False
        for attr in self.loaded & self.waiting.keys():
            for dep, entry in self.waiting.pop(attr).items():
                if dep not in self.units:
                    self.units[dep] = entry
                    self.queue.append(dep)
                    carried = True
        return carried

    def _keep_methods(self) -> bool:
        kept = False
        for key, waiting in self.pending.items():
            own = self._own(key)
            names = [n for n in waiting if key in self.whole or n in self.attributes or n in own]
            if key in self.tables:
                names += [n for n in waiting if n not in names and self._mentioned(n)]
            for name in names:
                method = waiting.pop(name)
                entry = self.units[key]
                for part in method.parts:
                    effect = self._effect((key[0], key[1], part.index), entry.info, part)
                    self.parts[key].append(effect)
                    self.unscanned.append((entry.info, part, ()))
                    self._apply(effect, parent=key)
                self.attributes |= method.attributes
                self._own(key).update(method.own)
                kept = True
        return kept

    def _keep_bases_whole(self, info: ModuleInfo, unit: Unit) -> None:
        """A class that is not plain may have any method called by code outside the
        closure, inherited ones too: the plain classes it derives from are kept whole."""
        stack = list(self.methods.internal_bases(info, unit))
        while stack:
            home, base = stack.pop()
            key = (home.source, home.module, base.index)
            if key not in self.whole:
                self.whole.add(key)
                stack.extend(self.methods.internal_bases(home, base))

    def _stand_ins(self) -> None:
        """Classes the closure only tests against (``isinstance(x, C)``) or names in
        annotations: no code of the closure builds one, so no object of the block is one,
        and an empty class of that name answers every such test as the original would.
        Functions it only stores in attributes it never reads: a function that raises when
        called stands in (:mod:`nnrag.extract.stored`)."""
        waiting = [item for deps in self.waiting.values() for item in deps.items()]
        unread = [item for deps in self.unread.values() for item in deps.items()]
        for key, entry in [*self.tested.items(), *waiting, *unread]:
            if key in self.units:
                continue
            self.units[key] = entry
            self.stubs.add(key)
            if any(key in deps for deps in self.unread.values()):
                self.imported.add(key)
            entry.effect = Effect(
                deps=(),
                load=frozenset(),
                call=frozenset(),
                imports=(),
                references=(),
                builtins=(),
                members=(),
                problems=(),
                sort_key=(key[0], key[1], entry.unit.start_line, key[2]),
            )

    def _combine(self) -> None:
        """Each plain class's effect: its always-kept part and its kept methods together."""
        for key, parts in self.parts.items():
            entry = self.units[key]
            load = frozenset().union(*(p.load for p in parts)) - {key}
            call = frozenset().union(*(p.call for p in parts)) - {key}
            entry.effect = Effect(
                deps=tuple(d for p in parts for d in p.deps),
                load=load,
                call=call,
                imports=tuple(i for p in parts for i in p.imports),
                references=tuple(r for p in parts for r in p.references),
                builtins=tuple(b for p in parts for b in p.builtins),
                members=tuple(m for p in parts for m in p.members),
                problems=tuple(dict.fromkeys(q for p in parts for q in p.problems)),
                sort_key=(key[0], key[1], entry.unit.start_line, key[2]),
            )

    def _path(self, key: UnitKey | None) -> tuple[str, ...]:
        labels: list[str] = []
        seen: set[UnitKey] = set()
        while key is not None and key not in seen:
            seen.add(key)
            entry = self.units[key]
            labels.append(_label(entry.unit))
            key = entry.parent
        return tuple(reversed(labels))

    # -- order -------------------------------------------------------------------------------

    def _order(self) -> list[UnitKey]:
        """Topological over load-time needs (stable by source, module, line); cycles broken.

        Units of one module binding the same name keep their file order (each needs the
        previous binder). When every such previous binder is in the closure, these edges are
        the same in every closure and the memoized components order it; otherwise this
        closure's graph is ordered as it is.
        """
        units = self.units
        if self.parts or self.stubs or self.unregistered:  # needs differ per closure
            return topological(self._closure_needs(self._own_needs()), self._sort_key)
        memo, previous = self.memo.needs, self.memo.previous
        needs: dict[UnitKey, frozenset[UnitKey]] = {}
        calls: CallClosure | None = None
        closed = True
        for key, entry in units.items():
            wanted = memo.get(key)
            if wanted is None:
                # what must run before this unit: its load-time reads, and all they call
                # when they run then; the same in every closure, so memoized per index
                calls = calls or CallClosure(self.memo.effects, self.scanner.reach)
                found = set(_effect(entry).load)
                for dep in _effect(entry).load:
                    if runs_at_load(units[dep].unit, reader=entry.unit):
                        found |= calls.of(dep)
                found.discard(key)
                wanted = memo[key] = frozenset(found)
            before = previous.get(key)
            if before is None:
                before = previous[key] = self._previous_binders(key, entry)
            if before:
                closed = closed and all(other in units for other in before)
                wanted = wanted | before
            needs[key] = wanted
        if closed:
            return Components.order(self.memo.components, needs, self._sort_key)
        return topological(
            self._closure_needs({key: self.memo.needs[key] for key in self.units}),
            self._sort_key,
        )

    def _own_needs(self) -> dict[UnitKey, frozenset[UnitKey]]:
        """The load-time needs of this closure's units (see :meth:`_order`), computed from
        this closure's effects (a plain class brings only its kept methods' reads, a
        registering decorator left out nothing)."""
        units = self.units
        calls = CallClosure({key: _effect(entry) for key, entry in units.items()}, {})
        needs: dict[UnitKey, frozenset[UnitKey]] = {}
        for key, entry in units.items():
            load = _effect(entry).load & units.keys()  # not a decorator's registry left out
            found = set(load)
            for dep in load:
                if runs_at_load(units[dep].unit, reader=entry.unit):
                    found |= calls.of(dep)
            found.discard(key)
            needs[key] = frozenset(found)
        return needs

    def _previous_binders(self, key: UnitKey, entry: _Included) -> frozenset[UnitKey]:
        """For each name ``entry`` binds, the unit of its module binding it just before."""
        found: set[UnitKey] = set()
        binders = self.symbols.binders(entry.info)
        for name in entry.unit.binds:
            earlier = None
            for unit in binders.get(name, ()):
                if unit.index == key[2]:
                    break
                earlier = unit
            if earlier is not None:
                found.add((key[0], key[1], earlier.index))
        return frozenset(found)

    def _closure_needs(
        self, needs: dict[UnitKey, frozenset[UnitKey]]
    ) -> dict[UnitKey, frozenset[UnitKey]]:
        """``needs`` plus, per name bound by several units of a module in this closure,
        each such unit after the previous one in it."""
        by_name: dict[tuple[str, str, str], list[UnitKey]] = {}
        for key, entry in self.units.items():
            for name in entry.unit.binds:
                by_name.setdefault((key[0], key[1], name), []).append(key)
        for keys in by_name.values():
            if len(keys) > 1:
                keys.sort(key=self._sort_key)
                for earlier, later in itertools.pairwise(keys):
                    needs[later] = needs[later] | {earlier}
        return needs

    def _sort_key(self, key: UnitKey) -> SortKey:
        return _effect(self.units[key]).sort_key


def _label(unit: Unit) -> str:
    if unit.binds:
        return unit.binds[0]
    return f"<{unit.kind} at line {unit.start_line}>"


def _effect(entry: _Included) -> Effect:
    assert entry.effect is not None, "every included unit is visited before ordering"
    return entry.effect
