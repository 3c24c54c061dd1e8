"""Cross-module name lookup over an Index: what a dotted chain read in a module denotes."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from nnrag.model import ImportBinding, ModuleInfo, Unit

if TYPE_CHECKING:
    from nnrag.index.snapshot import Index

Kind = Literal["definition", "external", "module", "builtin", "dunder", "typing", "missing"]
MissingReason = Literal["unresolved", "native", "not-indexed", "cycle"]

BUILTINS: frozenset[str] = frozenset(dir(builtins))
MODULE_DUNDERS: frozenset[str] = frozenset(
    {
        "__name__",
        "__file__",
        "__doc__",
        "__spec__",
        "__loader__",
        "__package__",
        "__builtins__",
        "__path__",
        "__cached__",
        "__dict__",
        "__annotations__",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """What a dotted chain denotes, and how many of its parts that took (``consumed``).

    - ``definition``: ``units`` of ``module`` bind ``name`` (def, class, assignment, or a
      compound ``if``/``try``/``with`` kept whole).
    - ``external``: ``binding`` (as written in ``module``) imports it from outside every
      indexed source; ``target`` is the absolute dotted name (``torch.nn.Conv2d``).
    - ``module``: the internal module ``target`` itself (``module`` its index entry).
    - ``builtin`` / ``dunder``: ``name`` is a builtin / a module attribute like ``__file__``.
    - ``typing``: bound only under ``if TYPE_CHECKING:`` (not a runtime dependency).
    - ``missing``: nothing binds it; ``reason`` says why, ``target`` what was looked for.
    """

    kind: Kind
    name: str
    consumed: int = 1
    module: ModuleInfo | None = None
    units: tuple[Unit, ...] = ()
    binding: ImportBinding | None = None
    target: str = ""
    reason: MissingReason | None = None

    def shifted(self, by: int) -> Resolution:
        """The same resolution, seen from a chain ``by`` parts longer at the front."""
        if by == 0:
            return self
        return Resolution(
            kind=self.kind,
            name=self.name,
            consumed=self.consumed + by,
            module=self.module,
            units=self.units,
            binding=self.binding,
            target=self.target,
            reason=self.reason,
        )

    @property
    def key(self) -> tuple[str, str] | None:
        """(module, name) of a definition or an external binding, for renames and references."""
        if self.module is None or self.kind not in ("definition", "external"):
            return None
        return (self.module.module, self.name)


_Key = tuple[str, str, str, tuple[str, ...], bool, int]
_OWN_KINDS = frozenset({"def", "class", "assign"})


def symbols_for(index: Index) -> Symbols:
    """The shared :class:`Symbols` of ``index`` (its memo lives as long as the index does)."""
    return index.analyses.of(Symbols, lambda: Symbols(index))


class Symbols:
    """Memoized name lookup over one Index (cycle-safe; one instance per Index)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._binders: dict[tuple[str, str], dict[str, tuple[Unit, ...]]] = {}
        self._exports: dict[tuple[str, str], frozenset[str]] = {}
        self._namespaces: dict[tuple[str, str], frozenset[str]] = {}
        self._memo: dict[_Key, Resolution] = {}
        self._active: set[_Key] = set()
        self._cycles = 0
        self._files: dict[str, Literal["native", "not-indexed", "unresolved"]] = {}

    # -- per-module tables -------------------------------------------------------------------

    def binders(self, info: ModuleInfo) -> dict[str, tuple[Unit, ...]]:
        """Name -> the units of ``info`` that bind it at module level, in file order."""
        key = (info.source, info.module)
        table = self._binders.get(key)
        if table is None:
            building: dict[str, list[Unit]] = {}
            for unit in info.units:
                for name in unit.binds:
                    building.setdefault(name, []).append(unit)
            table = {name: tuple(units) for name, units in building.items()}
            self._binders[key] = table
        return table

    def computed_binders(self, info: ModuleInfo) -> tuple[Unit, ...]:
        """The units of ``info`` that bind module names by computed keys, in file order."""
        return tuple(u for u in info.units if u.binds_computed and not u.type_checking)

    def exports(self, info: ModuleInfo) -> frozenset[str]:
        """Names ``from info import *`` binds: ``__all__``, else public bound names (+ stars)."""
        key = (info.source, info.module)
        cached = self._exports.get(key)
        if cached is not None:
            return cached
        self._exports[key] = frozenset()  # cycle guard
        if info.all_names is not None:
            names = frozenset(info.all_names)
        else:
            found = {n for n in self.binders(info) if not n.startswith("_")}
            for star in info.star_imports:
                other = self._indexed(star, info.source)
                if other is not None:
                    found |= self.exports(other)
            names = frozenset(found)
        self._exports[key] = names
        return names

    def namespace(self, info: ModuleInfo) -> frozenset[str]:
        """The names a module object enumerates at run time (``vars(m)``, ``dir(m)``).

        ``__all__`` when the module defines it, else the public names its own definitions
        (def, class, assignment) bind. Not what it imports from other modules, nor what
        star imports under ``if TYPE_CHECKING:`` show a type checker (a lazy package binds
        its API only when a name is read): enumerating those would carry whole packages
        into every closure that passes a module object around.
        """
        key = (info.source, info.module)
        cached = self._namespaces.get(key)
        if cached is None:
            if info.all_names is not None:
                cached = frozenset(info.all_names)
            else:
                cached = frozenset(
                    name
                    for unit in info.units
                    if unit.kind in _OWN_KINDS and not unit.type_checking
                    for name in unit.binds
                    if not name.startswith("_")
                )
            self._namespaces[key] = cached
        return cached

    def attributes(self, info: ModuleInfo, words: Iterable[str]) -> frozenset[str]:
        """Those of ``words`` that ``getattr(m, word)`` finds on the module object of ``info``.

        Any name the module binds at run time (``getattr`` is not limited to ``__all__`` or
        public names), the names it enumerates (:meth:`namespace`), and, for a package, its
        submodules (``getattr(auto, "processing_auto")``).
        """
        bound = self.binders(info)
        namespace = self.namespace(info)

        def found(word: str) -> bool:
            if word in namespace or any(not u.type_checking for u in bound.get(word, ())):
                return True
            return (
                info.is_package
                and word.isidentifier()
                and self._is_module_name(f"{info.module}.{word}", info.source)
            )

        return frozenset(word for word in words if found(word))

    # -- lookup ------------------------------------------------------------------------------

    def lookup(
        self,
        info: ModuleInfo,
        chain: str | Sequence[str],
        *,
        before: int = 0,
        inclusive: bool = False,
    ) -> Resolution:
        """What ``chain`` (``"nn.Conv2d"`` or its parts) read in module ``info`` denotes.

        ``before``: a load-time read by the unit starting at that line sees only bindings
        made before it (``class LayerNorm(LayerNorm)``); 0 sees every binding. With
        ``inclusive`` the reading unit's own bindings count too (a ``try`` block reading a
        name it bound itself). A name bound only later falls back to every binding.
        """
        parts = tuple(chain.split(".")) if isinstance(chain, str) else tuple(chain)
        if inclusive and before:
            before = -before  # the memo key keeps the two modes apart
        return self._name(info, parts[0], parts[1:], top=True, before=before)

    def module_resolution(self, name: str, *, prefer: str | None = None) -> Resolution:
        """An absolute module name as an internal module, external, or a missing module."""
        return self._module(name, (), prefer=prefer, binding=None, where=None, top_name=name)

    def _name(
        self, info: ModuleInfo, name: str, rest: tuple[str, ...], *, top: bool, before: int = 0
    ) -> Resolution:
        key: _Key = (info.source, info.module, name, rest, top, before)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        if key in self._active:
            self._cycles += 1
            return Resolution(kind="missing", name=name, reason="cycle", target=info.module)
        self._active.add(key)
        cycles = self._cycles
        try:
            result = self._name_uncached(info, name, rest, top=top, before=before)
        finally:
            self._active.discard(key)
        if cycles == self._cycles:
            self._memo[key] = result
        return result

    def _name_uncached(
        self, info: ModuleInfo, name: str, rest: tuple[str, ...], *, top: bool, before: int
    ) -> Resolution:
        units = self.binders(info).get(name, ())
        if before > 0:
            units = tuple(u for u in units if u.start_line < before) or units
        elif before < 0:
            units = tuple(u for u in units if u.start_line <= -before) or units
        runtime = tuple(u for u in units if not u.type_checking)
        if units and not runtime:
            return Resolution(kind="typing", name=name, module=info, units=units)
        # the value a read sees comes from module-level bindings; a function that rebinds
        # the name (``global x``) matters only where something calls it, by its own name
        runtime = tuple(u for u in runtime if name not in u.rebinds) or runtime
        if runtime:
            last = runtime[-1]
            lazy = _lazy_binding(last, name)
            if lazy is None and len(runtime) == 1:
                lazy = self._branch_import(info, last, name)
            if lazy is not None:
                return self.follow(info, lazy, name, rest)
            if last.kind != "import":
                defs = tuple(u for u in runtime if u.kind != "import")
                return Resolution(kind="definition", name=name, module=info, units=defs)
            binding = binding_for(last, name)
            if binding is not None:
                return self.follow(info, binding, name, rest)
        if name in MODULE_DUNDERS:
            return Resolution(kind="dunder", name=name, module=info)
        for star in reversed(info.star_imports):
            other = self._indexed(star, info.source)
            if other is not None and name in self.exports(other):
                found = self._name(other, name, rest, top=False)
                if found.kind != "missing":
                    return found
        if info.is_package:
            sub = f"{info.module}.{name}"
            # ``import pkg._ext`` then ``pkg._ext.op``: a compiled extension, as ``from pkg
            # import _ext`` (``_file_kind``; not a dunder, which is a missing attribute)
            if self._is_module_name(sub, info.source) or (
                not name.startswith("__") and self._file_kind(sub, info.source) == "native"
            ):
                return self._module(sub, rest, prefer=info.source, binding=None, where=None)
        if top and name in BUILTINS:
            return Resolution(kind="builtin", name=name)
        computed = self.computed_binders(info)
        if computed and (info.all_names is None or name in info.all_names):
            return Resolution(kind="definition", name=name, module=info, units=computed)
        for star in reversed(info.star_imports):
            if self._indexed(star, info.source) is None and not self._internal(star):
                return Resolution(
                    kind="external",
                    name=name,
                    module=info,
                    binding=_named_from_star(info, star, name),
                    target=".".join((star, name, *rest)),
                )
        return Resolution(
            kind="missing", name=name, module=info, reason="unresolved", target=info.module
        )

    def _branch_import(self, info: ModuleInfo, unit: Unit, name: str) -> ImportBinding | None:
        """The import of an indexed module that binds ``name`` in a branch of ``unit``, a
        run-time ``if`` that binds ``name`` by nothing else and in no other way.

        Whichever branch runs, ``name`` is then that one object or unbound: a lazy package
        (``if TYPE_CHECKING or SLOW_IMPORT: from .peft import Mixin`` ``else:
        sys.modules[__name__] = LazyModule(...)``) hands out the same object the import
        names. So ``name`` resolves through the import, not to the whole unit (whose branch
        may not run, leaving the name unbound in a block file). An import from outside the
        sources keeps the unit (and so its guard).
        """
        if unit.kind != "if" or unit.type_checking or name in unit.assigns:
            return None
        found = [b for b in unit.imports if b.name == name and b.attr != "*"]
        if not found or len({(b.module, b.attr) for b in found}) > 1:
            return None
        if self._indexed(found[-1].module, info.source) is None:
            return None
        return found[-1]

    def follow(
        self, info: ModuleInfo, binding: ImportBinding, name: str, rest: tuple[str, ...]
    ) -> Resolution:
        """Resolve ``name`` (+``rest``) bound in ``info`` by the import ``binding``."""
        if binding.attr is None:
            top_package = binding.module.split(".", 1)[0]
            binds_top = binding.name == top_package and binding.module != top_package
            module = top_package if binds_top else binding.module
            return self._module(
                module, rest, prefer=info.source, binding=binding, where=info, top_name=name
            )
        target = self._indexed(binding.module, info.source)
        if target is None:
            return self._module(
                f"{binding.module}.{binding.attr}",
                rest,
                prefer=info.source,
                binding=binding,
                where=info,
                top_name=name,
                attr_of=binding.module,
            )
        found = self._name(target, binding.attr, rest, top=False)
        if found.kind == "missing":
            # ``from pkg import sub``: a submodule, indexed or not (a compiled extension)
            sub = f"{binding.module}.{binding.attr}"
            if self._is_module_name(sub, info.source) or (
                found.reason in ("unresolved", "native") and target.is_package
            ):
                return self._module(sub, rest, prefer=info.source, binding=binding, where=info)
        return found

    def absent_import(self, info: ModuleInfo, unit: Unit, binding: ImportBinding) -> bool:
        """Whether the import ``binding`` of ``unit`` of ``info`` raises ``ImportError`` in
        the original, where it is written, and so is no dependency (the block file raises
        there too, :meth:`absent_error`).

        - Inside a function (``unit.local_imports``): an import of a module of the sources
          that does not exist, or of a name its module binds in no way (``from pkg.core.export
          import clip`` of a release that moved it away, in a branch that runs only on export):
          it raises when, and only when, the function runs that line.
        - A ``from m import x`` inside the ``try`` unit ``unit``, where the indexed module
          ``m`` binds ``x`` in no way (no definition, import, star import or submodule), while
          the unit binds the name otherwise too: the ``try`` (or an enclosing one) handles it
          (``from mmcv import digit_version`` in an ``except ImportError:`` fallback, for an
          mmcv that no longer has it). A name the unit binds only so stays a problem: a block
          file would read it unbound.
        """
        if binding.attr == "*" or binding.type_checking:
            return False
        if binding in unit.local_imports:
            return self.absent_error(info, binding) is not None
        if unit.kind != "try" or binding.attr is None:
            return False
        if binding.name not in unit.assigns and not any(
            other.name == binding.name
            and (other.module, other.attr) != (binding.module, binding.attr)
            for other in unit.imports
        ):
            return False
        if self._indexed(binding.module, info.source) is None:
            return False
        found = self.follow(info, binding, binding.name, ())
        return found.kind == "missing" and found.reason == "unresolved"

    def lazy_export(self, info: ModuleInfo, name: str) -> ImportBinding | None:
        """The import that names what module ``info`` hands out as its attribute ``name`` at
        run time through a module-level ``__getattr__`` (PEP 562), when it binds ``name`` only
        by that import under ``if TYPE_CHECKING:`` (``if TYPE_CHECKING: from sdk import
        Client`` beside ``def __getattr__(name): return getattr(import_module("sdk"), name)``).
        Only another module's ``from info import name`` or ``info.name`` goes through it."""
        units = self.binders(info).get(name, ())
        if not units or any(not unit.type_checking for unit in units):
            return None
        if not any(
            unit.kind == "def" and not unit.type_checking
            for unit in self.binders(info).get("__getattr__", ())
        ):
            return None
        binding = binding_for(units[-1], name)
        return binding if binding is not None and binding.attr is not None else None

    def absent_error(self, info: ModuleInfo, binding: ImportBinding) -> str | None:
        """The exception (a Python expression) the import ``binding`` in ``info`` raises with
        these sources: ``ModuleNotFoundError`` for the first module of the sources on its path
        that exists nowhere, ``ImportError`` for a name its indexed module binds in no way;
        ``None`` when it imports (or nnrag cannot tell: a compiled extension, an external, a
        source whose checkout is not at hand to look for the file)."""
        source = self.index.source_of_module(binding.module)
        if source is None or source not in self.index.checkouts:
            return None
        parts = binding.module.split(".")
        for size in range(1, len(parts) + 1):
            name = ".".join(parts[:size])
            if self._indexed(name, info.source) is not None or self.index.is_extern(name):
                continue
            if self._file_kind(name, info.source) != "unresolved" or self._folder(name):
                return None
            message = f"No module named {name!r}"
            return f"ModuleNotFoundError({message!r}, name={name!r})"
        if binding.attr in (None, "*"):
            return None
        found = self.follow(info, binding, binding.name, ())
        if found.kind != "missing" or found.reason != "unresolved":
            return None
        message = f"cannot import name {binding.attr!r} from {binding.module!r}"
        return f"ImportError({message!r}, name={binding.module!r})"

    def _folder(self, module: str) -> bool:
        """Whether ``module`` is a folder of its source's checkout (a namespace package)."""
        checkout = self.index.checkouts.get(self.index.source_of_module(module) or "")
        return checkout is not None and Path(checkout.root, *module.split(".")).is_dir()

    def _module(
        self,
        module: str,
        rest: tuple[str, ...],
        *,
        prefer: str | None,
        binding: ImportBinding | None,
        where: ModuleInfo | None,
        top_name: str = "",
        attr_of: str | None = None,
    ) -> Resolution:
        """The module ``module`` (named by one chain part), then ``rest`` inside it."""
        info = self._indexed(module, prefer)
        if info is None:
            if self._internal(attr_of or module):
                missing = attr_of or module
                reason = self._file_kind(missing, prefer)
                return Resolution(
                    kind="missing",
                    name=top_name or module,
                    module=where,
                    reason=reason,
                    target=missing,
                    binding=binding,
                )
            return Resolution(
                kind="external",
                name=top_name or module.rsplit(".", 1)[-1],
                module=where,
                binding=binding,
                target=".".join((module, *rest)),
            )
        if not rest:
            return Resolution(kind="module", name=module, module=info, target=module)
        return self._name(info, rest[0], rest[1:], top=False).shifted(1)

    # -- module files ------------------------------------------------------------------------

    def _is_module_name(self, name: str, prefer: str | None) -> bool:
        return self._indexed(name, prefer) is not None

    def stars_known(self, info: ModuleInfo) -> bool:
        """Whether every star import of ``info`` (and of the modules those import, in turn)
        is of an indexed module: then a name none of them exports is bound by none."""
        seen: set[str] = set()
        pending = [info]
        while pending:
            current = pending.pop()
            for star in current.star_imports:
                if star in seen:
                    continue
                seen.add(star)
                other = self._indexed(star, current.source)
                if other is None:
                    return False
                pending.append(other)
        return True

    def _indexed(self, module: str, prefer: str | None) -> ModuleInfo | None:
        """The internal module ``module``: ``None`` when external or ``extern`` (an import)."""
        if self.index.is_extern(module):
            return None
        return self.index.module(module, prefer=prefer)

    def _internal(self, module: str) -> bool:
        """Whether ``module`` lies in a package of some indexed source."""
        return self.index.source_of_module(module) is not None

    def _file_kind(
        self, module: str, prefer: str | None
    ) -> Literal["native", "not-indexed", "unresolved"]:
        """Why an internal module is not indexed: a compiled extension, or a file out of scope."""
        cached = self._files.get(module)
        if cached is not None:
            return cached
        # a private name (``_C``, ``_ext``) is a compiled extension even when the checkout has
        # no binary (wheels unpacked without them, sdists that build them); so is any module
        # with a binary next to its would-be source; a public name that exists nowhere is not
        kind: Literal["native", "not-indexed", "unresolved"] = (
            "native" if module.rsplit(".", 1)[-1].startswith("_") else "unresolved"
        )
        source = self.index.source_of_module(module)
        checkout = self.index.checkouts.get(source or prefer or "")
        if checkout is not None:
            base = Path(checkout.root, *module.split("."))
            if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
                kind = "not-indexed"
            elif base.parent.is_dir() and any(
                path.suffix in (".so", ".pyd") for path in base.parent.glob(base.name + ".*")
            ):
                kind = "native"
        self._files[module] = kind
        return kind


def binding_for(unit: Unit, name: str) -> ImportBinding | None:
    """The last import binding of ``unit`` that binds ``name`` (not a star import)."""
    found = None
    for binding in unit.imports:
        if binding.name == name and binding.attr != "*":
            found = binding
    return found


def _lazy_binding(unit: Unit, name: str) -> ImportBinding | None:
    """The import that binds ``name`` in the ``if TYPE_CHECKING:`` branch of a run-time
    ``if``/``else`` unit, when nothing else in the unit binds it by import.

    A lazy package (``if TYPE_CHECKING: from .a import X`` ``else: sys.modules[__name__] =
    LazyModule(...)``) hands out exactly that object when ``X`` is read, so ``X`` resolves
    through the import, not to the whole unit (whose ``else`` branch builds the lazy
    machinery, and whose branch imports name the whole package). Not when the unit also
    assigns ``name``: the run sees that value.
    """
    if unit.kind != "if" or unit.type_checking or name in unit.assigns:
        return None  # ``else: X = make()`` binds what the run sees
    found = None
    for binding in unit.imports:
        if binding.name == name and binding.attr != "*":
            if not binding.type_checking:
                return None
            found = binding
    return found


def _named_from_star(info: ModuleInfo, module: str, name: str) -> ImportBinding:
    """``from module import name`` for a name only ``info``'s ``from module import *`` of an
    external module can bind (``simplify`` through ``from sympy import *``): the block file
    imports it by name, so it says where the name comes from, and a name the package lacks
    fails at import with the package named."""
    star = next(
        (
            binding
            for unit in info.units
            for binding in unit.imports
            if binding.attr == "*" and binding.module == module
        ),
        None,
    )
    if star is None:
        return ImportBinding(name=name, module=module, attr=name)
    return replace(star, name=name, attr=name)
