"""Per-method reachability: which methods of a plain helper class a closure can call.

A class is one unit of the index, and including it used to include what every one of its
methods reads. For a *plain* class (its bases are builtins, ``abc``/``typing`` classes or
plain classes of the sources; no metaclass but ``abc.ABCMeta``; it never looks its own
attributes up by a computed name) only code that spells a method's name calls it:
``obj.method``, ``getattr(obj, "method")``. So a method of such a class is kept when a kept
part of the closure reads an attribute of that name (or quotes it), or reads it on
``self``/``cls`` in a plain class of the same family (bases and subclasses); its reads count
only then. Dunder and sunder methods (``__call__``, ``_missing_``: called by Python itself),
abstract methods, methods whose decorators may keep them somewhere (``_registers``:
a decorator of the sources whose code stores its argument, :func:`keeps_argument`, or an
external one named like ``register``) and methods the class body names (a local variable
of the same name will do; their reads and calls count with the always-kept part) are always
kept. A decorator that wraps (``validate_hf_hub_args``, a docstring factory) leaves its method
reachable only through its name, like an undecorated one.

A *module class* (its bases are ``torch.nn`` classes, plain classes or module classes of the
sources) gets the same treatment with what torch can call added to the always-kept part:
methods whose names ``torch.nn.Module`` or its torch bases define or spell in their source
(``forward``, ``extra_repr``, ``_load_from_state_dict``, ``reset_parameters`` of a conv: the
table ``nnrag/data/torch_nn.json`` written by ``benchmarks/gen_torch_nn.py`` from the
supported torch), and its properties.
Torch's names count as read on ``self`` by the class's whole family, so a plain mixin keeps
them too. A module class that looks itself up by a computed name (``getattr(self, n)`` with
``n`` a parameter or a loop variable, ``dir(self)``, ``type(self).__dict__``) is kept whole;
a name held in an attribute (``getattr(self, self.base_model_prefix)``) is not computed,
since such attributes hold string literals of the closure, which count as spelled
(:mod:`nnrag.extract.lookups`). The block class itself keeps every method (the resolver marks it
whole). So ``from_pretrained``/``save_pretrained`` of a model base reach nothing unless the
block spells them.

A class with other bases (``logging.Logger``, ``json.JSONEncoder``, a base of a library that
is not a source: code outside the closure calls their methods by name) is kept whole, and so
are the classes of the sources it derives from (:meth:`MethodIndex.internal_bases`).
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from nnrag.extract.lookups import (
    Spelled,
    keeps_argument,
    only_wraps,
    prunable,
    self_lookups,
    spelled,
)
from nnrag.extract.parts import part_index, part_of, rest_of
from nnrag.extract.tables import table_entries
from nnrag.index.discover import torch_table
from nnrag.model import ModuleInfo, Unit
from nnrag.pyscope.scopes import dotted as _dotted

if TYPE_CHECKING:
    from nnrag.extract.needs import UnitKey, UnitScanner
    from nnrag.index.symbols import Symbols

__all__ = ["Members", "Method", "MethodIndex", "drop_methods"]

_PLAIN_MODULES = frozenset({"abc", "typing", "typing_extensions", "builtins"})
"""External modules whose classes call no method of a subclass by a non-dunder name."""
"""Decorators that register a method nowhere. ``abstractmethod`` is not one of them: an
abstract method left out would let an incomplete subclass be built."""
_SELF = frozenset({"self", "cls"})
_ACCESSORS = frozenset({"setter", "getter", "deleter"})
_ATTRIBUTE = re.compile(r"\.\s*([A-Za-z_]\w*)")
_QUOTED = re.compile(r"""(['"])([A-Za-z_]\w{0,79})\1""")
_PROSE = re.compile(r"""(\"\"\"|\'\'\')[\s\S]*?\1|#[^\n]*""")
_MODULE_DECORATORS = frozenset({"staticmethod", "classmethod", "overload"})
"""Decorators that leave a method of a module class prunable, with :data:`_WRAPPERS` and the
functions of the sources that only wrap (:func:`only_wraps`)."""
_WRAPPERS = frozenset(
    {"functools.wraps", "torch.no_grad", "torch.enable_grad", "torch.inference_mode"}
)
"""External decorators that wrap a function and keep it nowhere (the standard library's
``wraps``; torch's grad modes)."""


@lru_cache(maxsize=1)
def torch_names() -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """(names ``torch.nn.Module`` defines or spells, qualified torch class -> the names its
    other torch bases add), from ``nnrag/data/torch_nn.json``."""
    text = resources.files("nnrag").joinpath("data/torch_nn.json").read_text(encoding="utf-8")
    data = json.loads(text)
    module = frozenset(str(name) for name in data.get("module_names", ()))
    classes = {
        str(qualified): frozenset(str(name) for name in entry.get("names", ()))
        for qualified, entry in data["classes"].items()
    }
    return module, classes


@dataclass(frozen=True, slots=True)
class Method:
    """One prunable method (all defs of one name: a property's getter and setter)."""

    name: str
    parts: tuple[Unit, ...]
    """Synthetic units: the method's own lines and reads (indexes below zero)."""
    attributes: frozenset[str]
    """Attribute names and quoted words its code reads (what it can call in turn)."""
    own: frozenset[str]
    """Attributes it reads on ``self``/``cls`` (methods of its own class family)."""
    spans: tuple[tuple[int, int], ...]
    """Absolute (first, last) lines of each def, decorators included."""


@dataclass(frozen=True, slots=True)
class Members:
    """A plain class split into what always comes with it and its prunable methods."""

    always: Unit
    """A synthetic unit: the class with the reads of its prunable methods taken out."""
    attributes: frozenset[str]
    """Attribute names, quoted words and names of the always-kept part."""
    own: frozenset[str]
    """Attributes the always-kept part reads on ``self``/``cls``."""
    methods: tuple[Method, ...]
    table: bool = False
    """A string table (:mod:`nnrag.extract.tables`): the members are its entries, by key."""


class MethodIndex:
    """Per index: each class unit split into its members (``None``: kept whole)."""

    def __init__(self, symbols: Symbols, scanner: UnitScanner) -> None:
        self.symbols = symbols
        self.scanner = scanner
        self._members: dict[UnitKey, Members | None] = {}
        self._bases: dict[UnitKey, tuple[tuple[ModuleInfo, Unit], ...] | None] = {}
        self._torch: dict[UnitKey, frozenset[str]] = {}
        """Class -> the names its direct ``torch.nn`` bases can call it by (if it has any)."""
        self._module: dict[UnitKey, frozenset[str] | None] = {}
        self._attributes: dict[UnitKey, frozenset[str]] = {}

    def members(self, info: ModuleInfo, unit: Unit) -> Members | None:
        """The members of a plain class unit; ``None`` for any other unit (kept whole)."""
        key = (info.source, info.module, unit.index)
        if key in self._members:
            return self._members[key]
        self._members[key] = None  # cycle guard (a class deriving from itself via aliases)
        found = None
        if unit.kind == "class" and not unit.type_checking and len(unit.classes) == 1:
            found = self._split(info, unit)
        elif unit.kind == "assign" and not unit.type_checking:
            found = self._table(info, unit)
        self._members[key] = found
        return found

    def bases(self, info: ModuleInfo, unit: Unit) -> tuple[tuple[ModuleInfo, Unit], ...] | None:
        """The class units of the sources ``unit``'s class derives from directly, or ``None``
        when one of its bases is not a plain class (external, computed, a metaclass)."""
        key = (info.source, info.module, unit.index)
        if key not in self._bases:
            self._bases[key] = self._find_bases(info, unit)
        return self._bases[key]

    def module_names(self, info: ModuleInfo, unit: Unit) -> frozenset[str] | None:
        """The names torch can call a method of ``unit``'s class by, when it derives from a
        ``torch.nn`` class through bases :meth:`bases` accepts; ``None`` otherwise."""
        key = (info.source, info.module, unit.index)
        if key in self._module:
            return self._module[key]
        self._module[key] = None  # cycle guard
        bases = self.bases(info, unit)
        found = self._torch.get(key)
        for home, base in bases or ():
            inherited = self.module_names(home, base)
            if inherited is not None:
                found = inherited if found is None else found | inherited
        self._module[key] = found
        return found

    def internal_bases(self, info: ModuleInfo, unit: Unit) -> tuple[tuple[ModuleInfo, Unit], ...]:
        """The class units of the sources ``unit``'s class derives from directly, whatever
        its other bases are."""
        tree = self.scanner.tree(info, unit) if unit.kind == "class" else None
        if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.ClassDef):
            return ()
        found: list[tuple[ModuleInfo, Unit]] = []
        for base in tree.body[0].bases:
            chain = _dotted(base.value if isinstance(base, ast.Subscript) else base)
            resolved = self.symbols.lookup(info, chain, before=unit.start_line) if chain else None
            if resolved is None or resolved.kind != "definition" or resolved.module is None:
                continue
            found += [(resolved.module, u) for u in resolved.units if u.kind == "class"]
        return tuple(found)

    def attributes(self, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        """Attribute names and quoted words in ``unit``'s code, except attributes of a
        module or an external object named at module level (``json.dump``) and, in a
        class, attributes of ``self``/``cls`` (its own, kept whole)."""
        key = (info.source, info.module, unit.index)
        found = self._attributes.get(key)
        if found is None:
            tree = self.scanner.tree(info, unit)
            if tree is None:
                text = _PROSE.sub("", self.scanner.text(info, unit))
                found = frozenset(m.group(1) for m in _ATTRIBUTE.finditer(text))
                found |= frozenset(m.group(2) for m in _QUOTED.finditer(text))
            else:
                other, own = self._read(info, unit, [tree])
                found = frozenset(other | own) if unit.kind != "class" else frozenset(other)
            self._attributes[key] = found
        return found

    def _read(
        self, info: ModuleInfo, unit: Unit, nodes: Sequence[ast.AST]
    ) -> tuple[set[str], set[str]]:
        """(attributes and quoted words, attributes of ``self``/``cls``) read in ``nodes``."""
        return self._reads(info, unit, [spelled(node) for node in nodes])

    def _reads(
        self, info: ModuleInfo, unit: Unit, facts: Sequence[Spelled]
    ) -> tuple[set[str], set[str]]:
        """:meth:`_read` from what each node spells."""
        reads = {*unit.load_reads, *unit.call_reads}
        other: set[str] = set()
        own: set[str] = set()
        for fact in facts:
            other |= fact.words  # method names, or a string table's keys
            for receiver, attr in fact.attributes:
                if receiver in _SELF:
                    own.add(attr)
                    continue
                if receiver is not None and f"{receiver}.{attr}" in reads:
                    found = self.symbols.lookup(info, receiver, before=0)
                    if found.kind in ("external", "module"):
                        continue  # ``json.dump``, ``F.relu``: not a method of ours
                other.add(attr)
        return other, own

    # -- splitting ---------------------------------------------------------------------------

    def _table(self, info: ModuleInfo, unit: Unit) -> Members | None:
        """A string table's entries as members named by their keys."""
        tree = self.scanner.tree(info, unit) if "{" in self.scanner.text(info, unit) else None
        found = None if tree is None else table_entries(info, unit, tree, self.symbols)
        if found is None:
            return None
        always, entries, plain = found
        methods = tuple(
            Method(
                name=name,
                parts=(part,),
                attributes=frozenset(self._read(info, unit, [node])[0]),
                own=frozenset(),
                spans=((part.start_line, part.end_line),),
            )
            for name, part, node in entries
        )
        return Members(
            always=always,
            attributes=frozenset(self._read(info, unit, plain)[0]),
            own=frozenset(),
            methods=methods,
            table=True,
        )

    def _find_bases(
        self, info: ModuleInfo, unit: Unit
    ) -> tuple[tuple[ModuleInfo, Unit], ...] | None:
        tree = self.scanner.tree(info, unit)
        if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.ClassDef):
            return None
        node = tree.body[0]
        found: list[tuple[ModuleInfo, Unit]] = []
        for keyword in node.keywords:  # abc.ABCMeta calls no method by name; others may
            chain = _dotted(keyword.value) if keyword.arg == "metaclass" else None
            resolved = self.symbols.lookup(info, chain, before=unit.start_line) if chain else None
            if (
                resolved is None
                or resolved.kind != "external"
                or resolved.target.split(".", 1)[0] not in _PLAIN_MODULES
            ):
                return None
        for base in node.bases:
            # Generic[T], Dict[str, int]: the subscripted class
            chain = _dotted(base.value if isinstance(base, ast.Subscript) else base)
            if chain is None:
                return None
            resolved = self.symbols.lookup(info, chain, before=unit.start_line)
            if resolved.kind == "builtin":
                continue
            if resolved.kind == "external":
                if resolved.target.split(".", 1)[0] in _PLAIN_MODULES:
                    continue
                qualified = torch_table().qualify(resolved.target)
                if qualified is None:
                    return None
                module, extra = torch_names()
                key = (info.source, info.module, unit.index)
                self._torch[key] = self._torch.get(key, frozenset()) | module | extra[qualified]
                continue
            home = resolved.module
            if resolved.kind != "definition" or home is None or len(resolved.units) != 1:
                return None
            if resolved.units[0].kind != "class":
                return None
            found.append((home, resolved.units[0]))
        return tuple(found)

    def _registering(
        self, info: ModuleInfo, unit: Unit, node: ast.ClassDef, *, module: bool
    ) -> frozenset[str]:
        """Methods whose decorators may keep them somewhere code finds them without their
        name (:meth:`_registers`): kept. Every other decorated method is reachable only
        through its name, like an undecorated one."""
        kept: set[str] = set()
        for stmt in node.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in stmt.decorator_list:
                if self._registers(info, unit, decorator, module=module):
                    kept.add(stmt.name)
        return frozenset(kept)

    def _registers(
        self, info: ModuleInfo, unit: Unit, decorator: ast.expr, *, module: bool
    ) -> bool:
        """Whether ``decorator`` may keep its method where code finds it without its name.

        ``staticmethod``/``classmethod``, property accessors (``x.setter``) and
        :data:`_WRAPPERS` do not; ``property`` does not in a plain class and keeps the
        method of a module class (``module``), as before. An external decorator does not
        unless its name says it registers (``register_hook``, ``registry.register``):
        library decorators on methods wrap them (argument checks, docstrings, caching,
        grad modes). A decorator of the
        sources, or the factory a decorator call comes from, registers when its code keeps
        its argument (:func:`keeps_argument`). Anything else (a computed decorator, a class,
        an instance) may register."""
        chain = _dotted(decorator.func if isinstance(decorator, ast.Call) else decorator)
        if chain is None:
            return True
        last = chain.rsplit(".", 1)[-1]
        if chain in _MODULE_DECORATORS or (chain != last and last in _ACCESSORS):
            return False
        resolved = self.symbols.lookup(info, chain, before=unit.start_line)
        if resolved.kind == "builtin":  # property: a module class keeps it (probes read them)
            return module
        if resolved.kind == "external":
            if resolved.target.rsplit(".", 1)[-1] == "cached_property":
                return module
            return resolved.target not in _WRAPPERS and "regist" in last.lower()
        if (
            resolved.kind != "definition"
            or resolved.module is None
            or len(resolved.units) != 1
            or resolved.units[0].kind != "def"
        ):
            return True
        tree = self.scanner.tree(resolved.module, resolved.units[0])
        body = tree.body if tree is not None else []
        if len(body) != 1:
            return True
        if not isinstance(decorator, ast.Call) and only_wraps(body[0]):
            return False
        return keeps_argument(body[0])

    def _split(self, info: ModuleInfo, unit: Unit) -> Members | None:
        bases = self.bases(info, unit)
        if bases is None or any(self.members(home, base) is None for home, base in bases):
            return None
        tree = self.scanner.tree(info, unit)
        assert tree is not None  # bases() parsed it
        node = tree.body[0]
        assert isinstance(node, ast.ClassDef)
        torch = self.module_names(info, unit)
        reach = self_lookups(node, module=torch is not None)
        if reach == "whole":
            return None
        registering = self._registering(info, unit, node, module=torch is not None)
        if reach == "properties":  # ``setattr(self, computed, v)`` runs property setters
            registering |= _properties(node)
        if torch is not None:
            torch = torch | registering
        rest = [n for n in node.body if not prunable(n, torch, registering)]
        rest_facts, named = _always_facts(node, rest, torch, registering)
        always_chains = set().union(*(fact.chains for fact in rest_facts))
        defs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for stmt in node.body:
            if (
                isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                and prunable(stmt, torch, registering)
                and stmt.name not in named
            ):
                defs.setdefault(stmt.name, []).append(stmt)
        if not defs and torch is None and not bases:
            return None  # nothing to prune, no base to prune: kept whole, as it is
        # a plain class with nothing to prune is still split when it has plain bases (their
        # methods are pruned by what it reads on ``self``), and a module class always is
        # (its family shares torch's names)
        offset = unit.start_line - 1
        methods: list[Method] = []
        taken: set[str] = set()
        part = 0
        for name, nodes in defs.items():
            parts: list[Unit] = []
            spans: list[tuple[int, int]] = []
            attributes: set[str] = set()
            own: set[str] = set()
            for def_node in nodes:
                first = min([def_node.lineno, *(d.lineno for d in def_node.decorator_list)])
                span = (first + offset, (def_node.end_lineno or def_node.lineno) + offset)
                spans.append(span)
                fact = spelled(def_node)
                chains = fact.chains
                part += 1
                parts.append(part_of(unit, part_index(unit, part), span, chains - always_chains))
                other, mine = self._reads(info, unit, [fact])
                attributes |= other
                own |= mine
                taken |= chains
            methods.append(
                Method(
                    name=name,
                    parts=tuple(parts),
                    attributes=frozenset(attributes),
                    own=frozenset(own),
                    spans=tuple(spans),
                )
            )
        dropped = [span for method in methods for span in method.spans]
        always = rest_of(unit, part_index(unit, 0), dropped, taken - always_chains)
        other, own = self._reads(info, unit, rest_facts)
        # an always-kept method (abstract, dunder) is overridden in the family: kept there too
        own |= {
            stmt.name for stmt in rest if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        own |= torch or frozenset()  # what torch calls on a module, its mixins define too
        return Members(
            always=always,
            attributes=frozenset(other | named),
            own=frozenset(own),
            methods=tuple(methods),
        )


def _always_facts(
    node: ast.ClassDef,
    rest: Sequence[ast.stmt],
    torch: frozenset[str] | None,
    registering: frozenset[str],
) -> tuple[list[Spelled], set[str]]:
    """(what the always-kept part of ``node`` spells, the names it spells). A prunable
    method the class body names (a local variable ``loss`` in ``__init__`` and a method
    ``loss``) is always kept too: its code counts with that part's (its reads, and the
    methods it calls), to a fixed point."""
    facts = [spelled(part) for part in [*node.bases, *node.decorator_list, *rest]]
    named = {name for fact in facts for name in fact.names}
    taken: set[int] = set()
    while True:
        more = [
            stmt
            for stmt in node.body
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            and id(stmt) not in taken
            and stmt.name in named
            and prunable(stmt, torch, registering)
        ]
        if not more:
            return facts, named
        for stmt in more:
            taken.add(id(stmt))
            fact = spelled(stmt)
            facts.append(fact)
            named |= fact.names


def drop_methods(chunk: str, names: frozenset[str]) -> str:
    """``chunk`` (one class, maybe after a ``# from`` comment) without the methods ``names``,
    and a comment above the class naming them; a body left empty gets ``pass``. The chunk is
    returned unchanged if it does not parse."""
    try:
        tree = ast.parse(chunk)
    except SyntaxError:
        return chunk
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    if len(classes) != 1:
        return chunk
    node = classes[0]
    lines = chunk.splitlines(keepends=True)
    cut: set[int] = set()
    indent = ""
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in names:
            first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
            last = stmt.end_lineno or stmt.lineno
            while last < len(lines) and not lines[last].strip():
                last += 1  # the blank lines after it go with it
            cut.update(range(first - 1, last))
            indent = indent or lines[stmt.lineno - 1][: stmt.col_offset]
    if not cut:
        return chunk
    if all(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in names
        for s in node.body
    ):
        first = min(cut)
        cut.discard(first)
        lines[first] = f"{indent}pass\n"
    head = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    note = textwrap.wrap(
        "nnrag: methods left out (neither this block, torch nor Python calls them by name): "
        + ", ".join(sorted(n for n in names if n in _defined(node))),
        width=96,
        initial_indent="# ",
        subsequent_indent="#   ",
        break_on_hyphens=False,
    )
    lines[head] = "".join(f"{line}\n" for line in note) + lines[head]
    kept = [line for number, line in enumerate(lines) if number not in cut]
    return "".join(kept)


def _properties(node: ast.ClassDef) -> frozenset[str]:
    """The methods of ``node`` that are properties (``@property``, ``@x.setter``,
    ``@cached_property``): what reading or setting an attribute of an instance runs."""
    found = set()
    for stmt in node.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in stmt.decorator_list:
            last = (_dotted(decorator) or "").rsplit(".", 1)[-1]
            if last in ("property", "cached_property") or last in _ACCESSORS:
                found.add(stmt.name)
    return frozenset(found)


def _defined(node: ast.ClassDef) -> set[str]:
    return {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
