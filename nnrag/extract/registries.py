"""Registries as data: which unit registers which type string into which registry object.

One mechanism for every flavour, driven by the pattern, not by names of libraries:

- an object (a module-level ``X = SomeClass(...)``) that units register into with
  ``@X.register...(...)`` on a class or def, or a statement ``X.register...(...)``; its
  key is the ``name=`` (a string or a list of strings) or first positional string, else
  the ``module=`` object's or the decorated definition's name. Registries whose
  constructor names another registry as ``parent=`` form one family (a child scope finds
  its parent's entries and the other way round, by scope name);
- a class whose ``register...`` classmethod fills a class attribute
  (``@_AttentionBackendRegistry.register(AttentionBackendName.NATIVE)``): the class is the
  registry object. A key that is a member of a class assigning it a string
  (``NATIVE = "native"``) stands for that string, reached where the closure quotes it or
  reads the member by name; the member's own definition hands it to nobody;
- a module-level dict filled by a function used as a decorator (``@register_model``),
  keyed by the decorated definition's name (see :class:`nnrag.extract.needs.Registry`);
- a module-level dict that a module-level function fills under its first parameter
  (``def register(alias, ...): _REGISTRY[alias] = ...``): the dict is the registry object,
  each load-time call of the function (``settings.register("jitter", __name__, "JITTER")``,
  as a statement or a decorator) registers the first argument's string.

A closure that reaches a registry carries the registrations of every type string it
reaches statically (string constants in its units: ``norm_cfg=dict(type='BN')``, class
attributes, defaults), and those registrations' own type strings in turn. A string counts
only in the units of a package that can hand it to the registry: a package of the family's
registries, or one that imports such a package, directly or through other packages of the
closure (a display-name table of a library that never imports the registry's framework
names its classes, ``("resnet", "ResNet")``, and builds nothing with them).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nnrag.extract.syntax import is_empty_container, type_strings
from nnrag.extract.tables import compared_only
from nnrag.index.symbols import Symbols, symbols_for
from nnrag.model import ModuleInfo, Registration, Unit
from nnrag.pyscope.scopes import dotted as _dotted

if TYPE_CHECKING:
    from nnrag.extract.needs import UnitKey, UnitScanner
    from nnrag.index.build import Index

__all__ = [
    "Carrier",
    "Family",
    "RegistryIndex",
    "registering",
    "registries_for",
]

_REGISTERING = "register"
_TYPE_KEY = re.compile(r"""\btype\b['"]?\s*[=:]""")
_DEFINITION = re.compile(r"(?:async\s+)?(?:def|class)\s+(\w+)")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def registries_for(index: Index, scanner: UnitScanner) -> RegistryIndex:
    """The shared :class:`RegistryIndex` of ``index`` (built on first use, per index)."""
    return index.analyses.of(
        RegistryIndex, lambda: RegistryIndex(index, symbols_for(index), scanner)
    )


@dataclass(slots=True)
class Family:
    """Registries connected by ``parent=``: the root's label and every member's unit."""

    label: str
    members: set[UnitKey] = field(default_factory=set)
    entries: dict[str, list[Registration]] = field(default_factory=dict)
    configs: bool = True
    """Whether config dicts' ``type=`` strings are its keys (not so for a dict a function
    fills: a ``{"type": "sample"}`` message near it builds nothing)."""


class RegistryIndex:
    """Every registration of an index, by registry family and type string.

    Built in one pass over the units whose load-time reads call a ``register...``
    attribute or a registry-filling function (a cheap filter on the index's data); only
    those units are parsed again.
    """

    def __init__(self, index: Index, symbols: Symbols, scanner: UnitScanner) -> None:
        self.index = index
        self.symbols = symbols
        self.scanner = scanner
        self.family_of: dict[UnitKey, Family] = {}
        """Registry object unit -> its family."""
        self.registering: dict[UnitKey, tuple[Registration, ...]] = {}
        """Registering unit -> what it registers."""
        self.into: dict[Registration, UnitKey] = {}
        """Registration -> the registry object (of its family) it registers into."""
        self._types: dict[UnitKey, tuple[tuple[str, int], ...]] = {}
        self._inferred: dict[UnitKey, tuple[str, str] | None] = {}
        self._frame_parameters: dict[UnitKey, tuple[str, int, bool] | None] = {}
        self._imports: dict[tuple[str, str], frozenset[str]] = {}
        self._strings: dict[UnitKey, frozenset[str]] = {}
        self._decorated: dict[UnitKey, frozenset[UnitKey]] = {}
        self._all_keys: frozenset[str] | None = None
        self._filled: dict[UnitKey, UnitKey | None] = {}
        """Function unit -> the module-level dict it fills under its first parameter."""
        self._members: dict[tuple[UnitKey, str], str] = {}
        """(class unit, member name) -> the string it stands for, for members used as keys."""
        self._registry_names: set[str] = set()
        """The names registrations were made through (``MODELS`` of ``MODELS.register_module``)."""
        self._build()
        self._member_names = frozenset(name for _, name in self._members)

    # -- queries -----------------------------------------------------------------------------

    def family(self, key: UnitKey) -> Family | None:
        """The family of the registry object defined by unit ``key`` (``None``: not one)."""
        return self.family_of.get(key)

    def strings(self, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        """Quoted words of ``unit``'s code (:meth:`UnitScanner.words`) that may be handed on
        as keys: not those it only compares a value with (``cfg['type'] == 'Pretrained'``,
        ``kind not in ('Tanh', 'GELU')``): a comparison tests a key that comes from
        elsewhere (a default, a caller), it builds nothing."""
        key = (info.source, info.module, unit.index)
        found = self._strings.get(key)
        if found is None:
            found = self.scanner.words(info, unit)
            if not found.isdisjoint(self._keys()):
                tree = self.scanner.tree(info, unit)
                found = found if tree is None else found - compared_only(tree)
            if self._members:
                found = (found - self._defined(key)) | self._spelled_members(info, unit)
            self._strings[key] = found
        return found

    def _defined(self, key: UnitKey) -> frozenset[str]:
        """The strings class ``key`` assigns to its members used as keys: defining a member
        hands its value to no registry."""
        return frozenset(text for (owner, _), text in self._members.items() if owner == key)

    def _spelled_members(self, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        """The strings of the key members ``unit`` reads by name (``Backend.FLASH``, through
        any import alias): spelling the member hands its key as surely as quoting it."""
        found: set[str] = set()
        for chain in (*unit.load_reads, *unit.call_reads):
            parts = chain.split(".")
            for end in range(1, len(parts)):
                if parts[end] not in self._member_names:
                    continue
                owner = self.symbols.lookup(info, parts[:end])
                if owner.kind == "definition" and owner.module and len(owner.units) == 1:
                    home = (owner.module.source, owner.module.module, owner.units[0].index)
                    text = self._members.get((home, parts[end]))
                    if text is not None:
                        found.add(text)
        return frozenset(found)

    def _keys(self) -> frozenset[str]:
        """Every type string some registry of the index has an entry for."""
        if self._all_keys is None:
            self._all_keys = frozenset(k for f in self._families() for k in f.entries)
        return self._all_keys

    def types(self, info: ModuleInfo, unit: Unit) -> tuple[tuple[str, int], ...]:
        """``type=`` strings of config dicts in ``unit`` (``dict(type='BN')``,
        ``{'type': 'BN'}``), each with its absolute line."""
        key = (info.source, info.module, unit.index)
        found = self._types.get(key)
        if found is None:
            text = self.scanner.text(info, unit)
            tree = self.scanner.tree(info, unit) if _TYPE_KEY.search(text) else None
            found = tuple(
                (text, unit.start_line + line - 1)
                for text, line in (type_strings(tree) if tree is not None else ())
            )
            self._types[key] = found
        return found

    def locations(self, info: ModuleInfo, unit: Unit) -> tuple[str, ...]:
        """The source text of the registry constructor's arguments that name modules of the
        indexed sources to import (``locations=['mmdet.models']``): lists of such names."""
        tree = self.scanner.tree(info, unit)
        call = _assigned_call(tree)
        if call is None:
            return ()
        text = self.scanner.text(info, unit)
        found: list[str] = []
        for keyword in call.keywords:
            value = keyword.value
            if not isinstance(value, (ast.List, ast.Tuple)) or not value.elts:
                continue
            names = [e.value for e in value.elts if isinstance(e, ast.Constant)]
            if len(names) == len(value.elts) and all(
                isinstance(n, str) and self.index.source_of_module(n) is not None for n in names
            ):
                segment = ast.get_source_segment(text, value)
                if segment:
                    found.append(segment)
        return tuple(found)

    def inferred_scope(self, info: ModuleInfo, unit: Unit) -> tuple[str, str] | None:
        """(parameter, value) for a registry constructor call in ``unit`` that leaves to the
        registry class a parameter the class fills from its caller's module (it reads the
        caller's frame): in a block file every caller is the block's one module, so the
        value the original computed in ``info.module`` is passed explicitly instead.

        The parameter is one of the class's ``__init__`` defaulting to ``None`` whose
        ``None`` branch calls a method of the class that reads a frame
        (``sys._getframe``, ``inspect.currentframe``, ``inspect.stack``); the value is the
        top-level package of ``info.module`` when that method takes the first dotted part of
        a name (``name.split('.')[0]``), else the whole module name.
        """
        key = (info.source, info.module, unit.index)
        if key not in self._inferred:
            self._inferred[key] = self._inferred_scope(info, unit)
        return self._inferred[key]

    def _inferred_scope(self, info: ModuleInfo, unit: Unit) -> tuple[str, str] | None:
        call = _assigned_call(self.scanner.tree(info, unit))
        chain = _dotted(call.func) if call is not None else None
        if call is None or chain is None:
            return None
        found = self.symbols.lookup(info, chain, before=unit.start_line)
        home = found.module
        if found.kind != "definition" or home is None or len(found.units) != 1:
            return None
        owner = (home.source, home.module, found.units[0].index)
        if owner not in self._frame_parameters:
            tree = self.scanner.tree(home, found.units[0])
            cls = tree.body[0] if tree is not None and len(tree.body) == 1 else None
            inferring = _frame_parameter(cls) if isinstance(cls, ast.ClassDef) else None
            self._frame_parameters[owner] = inferring
        inferred = self._frame_parameters[owner]
        if inferred is None or _passes(call, *inferred[:2]):
            return None
        name, _, first_part = inferred
        return name, info.module.partition(".")[0] if first_part else info.module

    def imported_packages(self, info: ModuleInfo) -> frozenset[str]:
        """The top-level packages ``info``'s code imports (module-level and local imports,
        except ``if TYPE_CHECKING:``), itself left out."""
        key = (info.source, info.module)
        found = self._imports.get(key)
        if found is None:
            own = _package(info.module)
            found = self._imports[key] = frozenset(
                _package(binding.module)
                for unit in info.units
                for binding in (*unit.imports, *unit.local_imports)
                if not binding.type_checking and _package(binding.module) != own
            )
        return found

    def registered(self, text: str) -> bool:
        """Whether any registry of the index has an entry for ``text`` (or, for a
        scope-qualified ``'scope.Key'``, for ``Key``)."""
        scoped = _scoped(text)
        return any(
            text in family.entries or (scoped is not None and scoped[1] in family.entries)
            for family in self._families()
        )

    def decorators_only(self, info: ModuleInfo, unit: Unit) -> frozenset[UnitKey]:
        """The registry objects class or def ``unit`` reads only in its registering
        decorators (``@MODELS.register_module()``), with the registrations made beside each
        object in its module (:meth:`UnitScanner.mutators`): empty when it reads one
        elsewhere too (``MODELS.build`` in a method), or registers otherwise.

        A registration is only reached through its registry: when nothing else of a closure
        holds the object, and no string of it names the key, no code of the closure can
        find the entry, and the decorator is left out with what it needs.
        """
        key = (info.source, info.module, unit.index)
        found = self._decorated.get(key)
        if found is None:
            found = self._decorated[key] = self._decorators_only(info, unit)
        return found

    def _decorators_only(self, info: ModuleInfo, unit: Unit) -> frozenset[UnitKey]:
        registrations = self.registering.get((info.source, info.module, unit.index))
        tree = _head(self.scanner.text(info, unit)) if registrations else None
        node = tree.body[-1] if tree is not None and tree.body else None
        if unit.kind not in ("class", "def") or not isinstance(node, _DEFINITIONS):
            return frozenset()
        into = [self.into.get(registration) for registration in registrations or ()]
        written = [_dotted(f) for d in node.decorator_list if (f := registering(d)) is not None]
        if not into or None in into or None in written:
            return frozenset()
        objects = {key for key in into if key is not None}
        chains = {chain for chain in written if chain is not None}

        def reads_object(chain: str) -> bool:
            found = self.symbols.lookup(info, chain)
            home = found.module
            return (
                found.kind == "definition"
                and home is not None
                and any((home.source, home.module, u.index) in objects for u in found.units)
            )

        if not all(map(reads_object, chains)):
            return frozenset()  # a decorator of that pattern into something else
        if any(reads_object(c) for c in (*unit.load_reads, *unit.call_reads) if c not in chains):
            return frozenset()
        modules = {module for _, module, _ in objects}
        if any(binding.module in modules for binding in unit.local_imports):
            return frozenset()
        kept: set[UnitKey] = set()
        for source, module, index in objects:
            home = self.index.module(module, prefer=source)
            if home is None or home.source != source:
                return frozenset()
            kept.add((source, module, index))
            kept.update(
                (source, module, mutator.index)
                for mutator in self.scanner.mutators(home, home.units[index])
            )
        return frozenset(kept)

    def _families(self) -> Iterator[Family]:
        seen: set[int] = set()
        for family in self.family_of.values():
            if id(family) not in seen:
                seen.add(id(family))
                yield family

    # -- building ----------------------------------------------------------------------------

    def _build(self) -> None:
        """Registrations of the indexed modules, then of the modules their sources' ``paths``
        leave out that register into a registry found so far (by the name it was registered
        through: ``MODELS.register_module``): a type string reaches its entry wherever in its
        package the entry is made (mmcv's ``carafe`` upsampler, registered in ``mmcv.ops``
        while the ``paths`` name ``mmcv/cnn``)."""
        for info in self.index.modules():
            self._add(info)
        if not self._registry_names:
            return
        names = "|".join(sorted(map(re.escape, self._registry_names)))
        mentions = re.compile(rf"\b(?:{names})\s*\.\s*\w*[Rr]egister".encode())

        def registers(data: bytes) -> bool:
            return b"egister" in data and mentions.search(data) is not None

        for source in self.index.sources:
            for info in self.index.modules_outside_paths(source, registers):
                self._add(info)

    def _add(self, info: ModuleInfo) -> None:
        """Record the registrations of ``info``'s units."""
        for unit in info.units:
            if unit.type_checking or not any(
                _REGISTERING in chain.rsplit(".", 1)[-1].lower() for chain in unit.load_reads
            ):
                continue
            found = tuple(self._registrations(info, unit))
            if found:
                self.registering[(info.source, info.module, unit.index)] = found

    def _registrations(self, info: ModuleInfo, unit: Unit) -> Iterator[Registration]:
        tree = (
            _head(self.scanner.text(info, unit))
            if unit.kind in ("class", "def")
            else self.scanner.tree(info, unit)
        )
        if tree is None:
            return
        loops = _loop_values(tree)
        for func, call, target in _sites(tree):
            node = func.value if isinstance(func, ast.Attribute) else None
            family = self._registry(info, unit, node) if node is not None else None
            into = self._object(info, unit, node) if family is not None and node else None
            member = None
            if family is not None:
                member = self._member_text(info, unit, _named(call)) if call else None
            elif call is not None and (filled := self._filled_dict(info, unit, func)):
                family, into = filled
            else:
                continue
            chain = _dotted(node) if node is not None else None
            if chain is not None:
                self._registry_names.add(chain.rsplit(".", 1)[-1])
            for key in [member] if member is not None else _keys(call, target, loops):
                registration = Registration(
                    registry=family.label,
                    key=key,
                    source=info.source,
                    module=info.module,
                    unit=unit.index,
                )
                family.entries.setdefault(key, []).append(registration)
                if into is not None:
                    self.into[registration] = into
                yield registration

    def entries(self, family: Family, text: str, present: Container[UnitKey]) -> list[Registration]:
        """The registrations of ``text`` in ``family``; those into a registry object in
        ``present`` when there are any (a scope finds its own entry before another's).

        A scope-qualified string (``'other.Conv'``: the registry looks ``Conv`` up in the
        registry of scope ``other``) reaches the entries of ``Conv`` registered by package
        ``other`` or into a registry object of package ``other`` only."""
        if text not in family.entries:
            scoped = _scoped(text)
            if scoped is None:
                return []
            scope, key = scoped
            return [r for r in family.entries.get(key, []) if scope in self._packages(r)]
        found = family.entries[text]
        own = [r for r in found if self.into.get(r) in present]
        return own or found

    def keys(self, family: Family, words: Iterable[str]) -> list[str]:
        """The words that reach entries of ``family``: its type strings, and scope-qualified
        forms of them (``'other.Conv'``), sorted."""
        return sorted(
            w
            for w in words
            if w in family.entries or ((s := _scoped(w)) is not None and s[1] in family.entries)
        )

    def _packages(self, registration: Registration) -> tuple[str, str | None]:
        """The top-level packages of ``registration``'s module and of its registry object."""
        into = self.into.get(registration)
        return _package(registration.module), (_package(into[1]) if into else None)

    def _registry(self, info: ModuleInfo, unit: Unit, node: ast.expr) -> Family | None:
        """The family of the registry object ``node`` (``X`` of ``X.register_module``) denotes."""
        chain = _dotted(node)
        if chain is None:
            return None
        found = self.symbols.lookup(info, chain, before=unit.start_line)
        home = found.module
        if found.kind != "definition" or home is None or len(found.units) != 1:
            return None
        owner = found.units[0]
        key = (home.source, home.module, owner.index)
        known = self.family_of.get(key)
        if known is not None:
            return known
        value = _assigned_call(self.scanner.tree(home, owner))
        if value is None and owner.kind != "class":
            return None
        family = Family(label=f"{home.module}:{found.name}", members={key})
        self.family_of[key] = family
        if value is None:  # a class whose ``register`` classmethod fills a class attribute
            return family
        parent = next((k.value for k in value.keywords if k.arg == "parent"), None)
        if parent is not None:
            above = self._registry(home, owner, parent)
            if above is not None and above is not family:
                self._merge(above, family)
        return self.family_of[key]

    def _filled_dict(
        self, info: ModuleInfo, unit: Unit, func: ast.expr
    ) -> tuple[Family, UnitKey] | None:
        """(family, dict unit) when ``func`` denotes a module-level function that fills a
        module-level dict of its module under its first parameter (``_REGISTRY[alias] =``)."""
        chain = _dotted(func)
        found = self.symbols.lookup(info, chain, before=unit.start_line) if chain else None
        if found is None or found.kind != "definition" or found.module is None:
            return None
        if len(found.units) != 1 or found.units[0].kind != "def":
            return None
        home, writer = found.module, found.units[0]
        key = (home.source, home.module, writer.index)
        if key not in self._filled:
            self._filled[key] = self._dict_filled_by(home, writer)
        into = self._filled[key]
        if into is None:
            return None
        family = self.family_of.get(into)
        if family is None:
            names = home.units[into[2]].binds
            label = f"{home.module}:{names[0] if names else into[2]}"
            family = Family(label=label, members={into}, configs=False)
            self.family_of[into] = family
        return family, into

    def _dict_filled_by(self, home: ModuleInfo, writer: Unit) -> UnitKey | None:
        tree = self.scanner.tree(home, writer)
        function = tree.body[0] if tree is not None and len(tree.body) == 1 else None
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        parameters = [*function.args.posonlyargs, *function.args.args]
        if not parameters:
            return None
        first = parameters[0].arg
        for node in ast.walk(function):
            if not (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and isinstance(node.slice, ast.Name)
                and node.slice.id == first
            ):
                continue
            found = self.symbols.lookup(home, [node.value.id])
            if found.kind != "definition" or found.module is not home or len(found.units) != 1:
                continue
            held = found.units[0]
            statement = self.scanner.tree(home, held)
            if (
                held.kind == "assign"
                and statement is not None
                and statement.body
                and is_empty_container(statement.body[0])
            ):
                return (home.source, home.module, held.index)
        return None

    def _object(self, info: ModuleInfo, unit: Unit, node: ast.expr) -> UnitKey | None:
        chain = _dotted(node)
        found = self.symbols.lookup(info, chain, before=unit.start_line) if chain else None
        if found is None or found.module is None or len(found.units) != 1:
            return None
        return (found.module.source, found.module.module, found.units[0].index)

    def _member_text(self, info: ModuleInfo, unit: Unit, node: ast.expr | None) -> str | None:
        """The string a key like ``Backend.NATIVE`` stands for: the member's value where its
        class assigns it a string (``NATIVE = "native"``, an enum or a constants class), so
        the key is reached when the closure quotes ``"native"`` (``Backend("native")``)."""
        if not isinstance(node, ast.Attribute):
            return None
        owner = _dotted(node.value)
        found = self.symbols.lookup(info, owner, before=unit.start_line) if owner else None
        if found is None or found.kind != "definition" or found.module is None:
            return None
        if len(found.units) != 1 or found.units[0].kind != "class":
            return None
        tree = self.scanner.tree(found.module, found.units[0])
        body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef)), []) if tree else []
        for statement in body:
            if (
                isinstance(statement, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == node.attr for t in statement.targets)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                home = (found.module.source, found.module.module, found.units[0].index)
                self._members[(home, node.attr)] = statement.value.value
                return statement.value.value
        return None

    def _merge(self, into: Family, other: Family) -> None:
        for member in other.members:
            self.family_of[member] = into
        into.members |= other.members
        for text, entries in other.entries.items():
            into.entries.setdefault(text, []).extend(entries)


class _Held(Protocol):
    """A unit a closure holds (``resolve``'s walk entries)."""

    @property
    def info(self) -> ModuleInfo: ...

    @property
    def unit(self) -> Unit: ...


class Carrier:
    """The registrations one closure carries: what its type strings reach, to a fixed point.

    Each :meth:`step` reads the words of the units added since the last step, by the
    top-level package of their module; every registry family the closure holds gets the
    entries keyed by a word read so far in a package that can reach the family
    (:meth:`reaching`).
    """

    def __init__(self, index: RegistryIndex) -> None:
        self.index = index
        self.carried: dict[Registration, None] = {}
        self.words: dict[str, set[str]] = {}
        """Top-level package -> the quoted words of its units in the closure."""
        self.imports: dict[str, set[str]] = {}
        """Top-level package -> the packages its modules in the closure import."""
        self.modules: set[tuple[str, str]] = set()
        self.scanned: set[UnitKey] = set()
        self.families: dict[int, tuple[UnitKey, Family]] = {}

    def step(self, units: Mapping[UnitKey, _Held]) -> list[tuple[Registration, UnitKey]]:
        """Registrations whose key the closure reaches, each with the registry unit (of its
        family, in the closure) that brings it."""
        for key in [k for k in units if k not in self.scanned]:
            self.scanned.add(key)
            entry = units[key]
            package = _package(entry.info.module)
            self.words.setdefault(package, set()).update(self.index.strings(entry.info, entry.unit))
            if (entry.info.source, entry.info.module) not in self.modules:
                self.modules.add((entry.info.source, entry.info.module))
                self.imports.setdefault(package, set()).update(
                    self.index.imported_packages(entry.info)
                )
            family = self.index.family(key)
            if family is not None:
                self.families.setdefault(id(family), (key, family))
        found: list[tuple[Registration, UnitKey]] = []
        for parent, family in self.families.values():
            reaching = self.reaching(family)
            words = set().union(*(w for p, w in self.words.items() if p in reaching))
            for text in self.index.keys(family, words):
                for registration in self.index.entries(family, text, units):
                    self.carried.setdefault(registration)
                    found.append((registration, parent))
        return found

    def reaching(self, family: Family) -> frozenset[str]:
        """The packages of the closure whose strings can reach ``family``'s registries: those
        of its members, and each package that imports one of them, directly or through other
        packages of the closure."""
        found = {_package(member[1]) for member in family.members}
        while True:
            more = {
                p for p, imported in self.imports.items() if p not in found and imported & found
            }
            if not more:
                return frozenset(found)
            found |= more

    def unregistered(self, units: Mapping[UnitKey, _Held]) -> Iterator[tuple[UnitKey, str, str]]:
        """(unit, ``path:line:col``, type string) of each config ``type=`` string, in a
        package that can reach a registry of the closure, that no registry of the index has
        an entry for."""
        families = [family for _, family in self.families.values() if family.configs]
        if not families:
            return
        known = set().union(*(family.entries.keys() for family in families))
        reaching = frozenset().union(*(self.reaching(family) for family in families))
        for key, entry in units.items():
            if _package(entry.info.module) not in reaching:
                continue
            for text, line in self.index.types(entry.info, entry.unit):
                if text not in known and not self.index.registered(text):
                    yield key, f"{entry.info.path}:{line}:1", text

    def registrations(self) -> tuple[Registration, ...]:
        return tuple(sorted(self.carried, key=lambda r: (r.registry, r.key, r.module, r.unit)))


def _package(module: str) -> str:
    """The top-level package of a dotted module name."""
    return module.partition(".")[0]


def _scoped(text: str) -> tuple[str, str] | None:
    """``'scope.Key'`` -> ``('scope', 'Key')``: a type string qualified by the scope of the
    registry to look it up in (split at the first dot, as registries with scopes do);
    ``None`` for a plain string."""
    scope, dot, key = text.partition(".")
    if not dot or not scope.isidentifier() or not key.isidentifier():
        return None
    return scope, key


def registering(decorator: ast.expr) -> ast.Attribute | None:
    """``X.register...`` of a decorator ``@X.register...`` or ``@X.register...(...)``
    (``None``: the decorator registers nothing by that pattern)."""
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(func, ast.Attribute) and _REGISTERING in func.attr.lower():
        return func
    return None


def _sites(tree: ast.Module) -> Iterator[tuple[ast.expr, ast.Call | None, str | None]]:
    """(registering callee, the registering call or ``None``, decorated name or ``None``)
    of every ``@X.register...``/``@X.register...(...)``/``@register...(...)`` decorator and
    ``X.register...(...)``/``register...(...)`` call statement in ``tree`` (compound units
    included)."""
    for node in ast.walk(tree):
        if isinstance(node, _DEFINITIONS):
            for decorator in node.decorator_list:
                registry = registering(decorator)
                if registry is not None:
                    call = decorator if isinstance(decorator, ast.Call) else None
                    yield registry, call, node.name
                elif isinstance(decorator, ast.Call) and _registering_name(decorator.func):
                    yield decorator.func, decorator, node.name
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if _registering_name(func) or (
                isinstance(func, ast.Attribute) and _REGISTERING in func.attr.lower()
            ):
                yield func, node.value, None


def _registering_name(func: ast.expr) -> bool:
    """Whether ``func`` is a bare name that says it registers (``register_setting``)."""
    return isinstance(func, ast.Name) and _REGISTERING in func.id.lower()


def _loop_values(tree: ast.Module) -> dict[str, list[str]]:
    """``for m in [nn.ReLU, nn.ELU]:`` -> ``{"m": ["nn.ReLU", "nn.ELU"]}`` (literal
    sequences of names only)."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, (ast.List, ast.Tuple))
        ):
            chains = [_dotted(element) for element in node.iter.elts]
            if chains and all(chains):
                found[node.target.id] = [c for c in chains if c]
    return found


def _named(call: ast.Call) -> ast.expr | None:
    """The key a registering call gives: its ``name=``, else its first positional argument."""
    named = next((k.value for k in call.keywords if k.arg == "name"), None)
    if named is None and call.args:
        named = call.args[0]
    return named


def _keys(
    call: ast.Call | None, target: str | None, loops: dict[str, list[str]] | None = None
) -> list[str]:
    """The type strings one registration uses (``loops``: what a loop variable runs over)."""
    if call is not None:
        named = _named(call)
        if isinstance(named, ast.Constant) and isinstance(named.value, str):
            return [named.value]
        if isinstance(named, (ast.List, ast.Tuple)):
            texts = [e.value for e in named.elts if isinstance(e, ast.Constant)]
            return [t for t in texts if isinstance(t, str)]
        if named is not None:
            return []  # a name computed at run time (``register_module(name, module=m)``)
        module = next((k.value for k in call.keywords if k.arg == "module"), None)
        if module is not None:
            chain = _dotted(module)
            if isinstance(module, ast.Name) and loops and module.id in loops:
                return [value.rsplit(".", 1)[-1] for value in loops[module.id]]
            return [chain.rsplit(".", 1)[-1]] if chain else []
    return [target] if target else []


def _frame_parameter(cls: ast.ClassDef) -> tuple[str, int, bool] | None:
    """(name, position, takes the first dotted part) of the ``__init__`` parameter of
    ``cls`` that defaults to ``None`` and is then computed by a method reading a frame."""
    methods = {
        node.name: node
        for node in cls.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    init = methods.get("__init__")
    if init is None:
        return None
    readers = {name for name, method in methods.items() if _reads_frame(method)}
    if not readers:
        return None
    positional = [a.arg for a in (*init.args.posonlyargs, *init.args.args)]
    with_default = positional[len(positional) - len(init.args.defaults) :]
    defaults = dict(zip(with_default, init.args.defaults, strict=True))
    defaults |= {
        a.arg: d for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=True) if d
    }
    for node in ast.walk(init):
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            continue
        test = node.test
        if not (
            isinstance(test.left, ast.Name)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            continue
        name = test.left.id
        default = defaults.get(name)
        if not (isinstance(default, ast.Constant) and default.value is None):
            continue
        branch = node.body if isinstance(test.ops[0], ast.Is) else node.orelse
        called = {
            call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            for stmt in branch
            for call in ast.walk(stmt)
            if isinstance(call, ast.Call)
        }
        reader = next((methods[m] for m in sorted(called & readers)), None)
        if reader is not None:
            position = positional.index(name) - 1 if name in positional else -1  # minus self
            return name, position, _first_part(reader)
    return None


def _reads_frame(node: ast.AST) -> bool:
    """Whether ``node`` calls ``sys._getframe``, ``inspect.currentframe`` or ``inspect.stack``."""
    return any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and (
            call.func.attr in ("_getframe", "currentframe")
            or (_dotted(call.func) or "").endswith("inspect.stack")
        )
        for call in ast.walk(node)
    )


def _first_part(node: ast.AST) -> bool:
    """Whether ``node`` takes element 0 of a ``split('.')``/``partition('.')`` (directly or
    through a name bound to the split)."""
    splits: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign) and _is_dot_split(sub.value):
            splits |= {t.id for t in sub.targets if isinstance(t, ast.Name)}
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Subscript)
            and isinstance(sub.slice, ast.Constant)
            and sub.slice.value == 0
            and (_is_dot_split(sub.value) or getattr(sub.value, "id", None) in splits)
        ):
            return True
    return False


def _is_dot_split(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("split", "partition", "rsplit")
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "."
    )


def _passes(call: ast.Call, name: str, position: int) -> bool:
    """Whether ``call`` gives the parameter ``name`` (at ``position``) a value, or may."""
    if any(k.arg in (name, None) for k in call.keywords):  # None: ``**kwargs``
        return True
    if any(isinstance(a, ast.Starred) for a in call.args):
        return True
    return 0 <= position < len(call.args)


def _assigned_call(tree: ast.Module | None) -> ast.Call | None:
    """The call a one-statement assignment unit binds (``MODELS = Registry(...)``)."""
    if tree is None or len(tree.body) != 1:
        return None
    stmt = tree.body[0]
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
    return value if isinstance(value, ast.Call) else None


def _head(text: str) -> ast.Module | None:
    """The decorators of a top-level class or def, parsed on an empty body (a class body
    can be thousands of lines; only its decorators register it)."""
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        match = _DEFINITION.match(line)
        if match is not None:
            try:
                return ast.parse("".join(lines[:number]) + f"class {match.group(1)}: pass\n")
            except SyntaxError:
                return None
    return None
