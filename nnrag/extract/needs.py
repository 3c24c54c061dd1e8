"""What each unit needs: its reads resolved once per index, and dynamic lookups in its syntax."""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnrag.diagnostics import closure_problem
from nnrag.extract.dynimport import SHIM, import_by_name
from nnrag.extract.syntax import (
    dotted,
    is_empty_container,
    lookups_only,
    may_find,
    mutates,
    reads_namespace,
    type_tests,
    writes,
)
from nnrag.index.symbols import Resolution, Symbols
from nnrag.model import Category, Diagnostic, ImportBinding, ModuleInfo, Unit

if TYPE_CHECKING:
    from nnrag.index.build import Index


def scanner_for(index: Index) -> UnitScanner:
    """The shared :class:`UnitScanner` of ``index`` (its memos live as long as the index)."""
    return index.analyses.of(UnitScanner, lambda: UnitScanner(index))


UnitKey = tuple[str, str, int]
"""(source, module, unit index)."""

COMPOUND = frozenset({"if", "try", "with"})
_TYPING = frozenset({"typing", "typing_extensions", "collections"})
_DYNAMIC_ROOTS = frozenset({"getattr", "globals", "vars", "eval", "exec", "__import__"})
_DYNAMIC_ROOTS |= frozenset({"importlib", "sys", "import_module"})
_QUOTED = re.compile(r"""(['"])([A-Za-z_][\w.:-]{0,79})\1""")
_PROSE = re.compile(r"""(\"\"\"|\'\'\')[\s\S]*?\1|#[^\n]*""")


Finding = tuple[Diagnostic, "Registry | None"]
"""A closure problem found in one unit's syntax (position absolute in the file, col 1-based),
and for a registry lookup, the registry (its home registrations are inlined)."""


@dataclass(frozen=True, slots=True)
class Use:
    """One name a unit needs, resolved once per index: a chain it reads or an import it keeps."""

    chain: str
    root: str
    prefix: str
    """The part of ``chain`` the resolution consumed (``layers.Mlp`` of ``layers.Mlp.x``)."""
    load: bool
    found: Resolution
    crosses: bool
    """The flat name differs from the chain as written (another module, alias or attribute)."""
    line: int = 0
    """For an import inside the unit's text: its line."""


@dataclass(frozen=True, slots=True)
class Summary:
    """What including one unit adds to a closure (computed once per unit and index)."""

    deps: tuple[tuple[ModuleInfo, Unit, bool], ...]
    """(module, unit, is a load-time need) of every internal definition it reads."""
    imports: tuple[tuple[tuple[str, str], ModuleInfo, ImportBinding], ...]
    references: tuple[tuple[tuple[str, str], tuple[str, str]], ...]
    builtins: tuple[tuple[str, str], ...]
    others: tuple[Use, ...]
    """Reads that become problems (or need the walk's context)."""
    findings: tuple[Finding, ...]
    tested: frozenset[UnitKey] = frozenset()
    """Classes among ``deps`` it only tests against (``isinstance(x, C)``) or names in
    annotations: a stand-in class of the same name does for them (see ``resolve``)."""


class UnitScanner:
    """Per-index memo of what each unit needs, and of its syntax where a scan is needed."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._lines: dict[tuple[str, str], list[str]] = {}
        self._trees: dict[UnitKey, ast.Module | None] = {}
        self._findings: dict[UnitKey, tuple[Finding, ...]] = {}
        self._registries: dict[tuple[str, str, str], Registry | None] = {}
        self._by_attr: dict[str, list[tuple[ModuleInfo, ImportBinding]]] | None = None
        self._uses: dict[UnitKey, tuple[Use, ...]] = {}
        self._summaries: dict[UnitKey, Summary] = {}
        self._mutators: dict[UnitKey, tuple[Unit, ...]] = {}
        self.reach: dict[UnitKey, frozenset[UnitKey]] = {}
        """Per unit: every unit its functions may run (see ``_CallClosure``)."""
        self._positions: dict[tuple[UnitKey, str], tuple[int, int]] = {}
        self._words: dict[UnitKey, frozenset[str]] = {}
        self._lookups: dict[tuple[UnitKey, str], tuple[tuple[str, ...], bool] | None] = {}
        self._tests: dict[UnitKey, frozenset[str]] = {}
        self._aliases: dict[UnitKey, bool] = {}

    def summary(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> Summary:
        """The closure effects of including ``unit`` (memoized)."""
        key = (info.source, info.module, unit.index)
        cached = self._summaries.get(key)
        if cached is not None:
            return cached
        deps: dict[tuple[str, str, int], tuple[ModuleInfo, Unit, bool]] = {}
        imports: list[tuple[tuple[str, str], ModuleInfo, ImportBinding]] = []
        references: list[tuple[tuple[str, str], tuple[str, str]]] = []
        builtins: set[tuple[str, str]] = set()
        others: list[Use] = []
        tested: set[UnitKey] = set()
        strong: set[UnitKey] = set()
        findings = self.findings(info, unit, symbols)
        for use in self.uses(info, unit, symbols):
            found = use.found
            home = found.module
            if found.kind == "definition" and home is not None:
                weak = (
                    not use.line
                    and use.prefix == use.chain  # the class itself, not ``C.Inner``
                    and all(dep.kind == "class" for dep in found.units)
                    and (
                        use.chain in self.type_tests(info, unit) or self.alias(info, unit, symbols)
                    )
                )
                for dep in found.units:
                    (tested if weak else strong).add((home.source, home.module, dep.index))
                    # a load-time read of a name bound only further down the same module
                    # is not an ordering constraint (the original would not run it either)
                    later = home is info and dep.start_line > unit.start_line
                    load = use.load and not later
                    ident = (home.source, home.module, dep.index)
                    if ident not in deps or (load and not deps[ident][2]):
                        deps[ident] = (home, dep, load)
                    if load:  # an object read at load time is read after its registrations
                        for mutator in self.mutators(home, dep):
                            if home is not info or mutator.start_line < unit.start_line:
                                deps[(home.source, home.module, mutator.index)] = (
                                    home,
                                    mutator,
                                    True,
                                )
            elif found.kind == "external" and home is not None and found.binding is not None:
                imports.append(((home.module, found.name), home, found.binding))
                if self._native_op(found.target):
                    others.append(use)
            elif found.kind == "builtin":
                builtins.add((info.module, found.name))
                continue
            elif found.kind == "typing" or (
                found.kind == "missing" and use.chain in unit.annotation_reads
            ):
                continue  # typing names, and annotations Python never evaluates
            else:
                others.append(use)
                continue
            if use.crosses:
                references.append(((info.module, use.prefix), (home.module, found.name)))
        for dep in self.mutators(info, unit):
            deps.setdefault((info.source, info.module, dep.index), (info, dep, False))
        summary = Summary(
            deps=tuple(deps.values()),
            imports=tuple(imports),
            references=tuple(references),
            builtins=tuple(sorted(builtins)),
            others=tuple(others),
            findings=findings,
            tested=frozenset(tested - strong),
        )
        self._summaries[key] = summary
        return summary

    def mutators(self, info: ModuleInfo, unit: Unit) -> tuple[Unit, ...]:
        """Units of ``unit``'s module that change the object it builds, at load time.

        ``Conv = LayerFactory(...)`` followed by ``@Conv.factory_function("conv")`` or
        ``Act.add_factory_class("elu", nn.ELU)`` in the same module: the object only works
        with those registrations, so they come with it (a registration in another module is
        not followed: importing that module is what would run it).
        """
        if unit.kind != "assign" or not unit.binds:
            return ()
        key = (info.source, info.module, unit.index)
        cached = self._mutators.get(key)
        if cached is None:
            cached = self._mutators[key] = self._find_mutators(info, unit)
        return cached

    def _find_mutators(self, info: ModuleInfo, unit: Unit) -> tuple[Unit, ...]:
        tree = self.tree(info, unit)
        if tree is None or not any(
            isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call)
            for stmt in tree.body
        ):
            return ()
        found: list[Unit] = []
        for other in info.units:
            if other.index <= unit.index or other.kind not in ("def", "class", "other"):
                continue
            targets = {c.split(".")[0] for c in other.load_reads if "." in c} & set(unit.binds)
            if not targets or set(other.binds) & targets:
                continue
            body = self.tree(info, other)
            if body is not None and any(mutates(stmt, targets) for stmt in body.body):
                found.append(other)
        return tuple(found)

    def _native_op(self, target: str) -> bool:
        """``torch.ops.<source package>.op``: an operator a compiled extension registers."""
        parts = target.split(".")
        return (
            len(parts) > 2
            and parts[:2] == ["torch", "ops"]
            and self.index.source_of_module(parts[2]) is not None
        )

    def uses(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> tuple[Use, ...]:
        """Every read of ``unit`` resolved, plus internal imports kept inside its text."""
        key = (info.source, info.module, unit.index)
        cached = self._uses.get(key)
        if cached is not None:
            return cached
        found: list[Use] = []
        for load, chains in ((True, unit.load_reads), (False, unit.call_reads)):
            for chain in chains:
                parts = chain.split(".")
                if parts[0] == "__all__":
                    continue
                resolved = symbols.lookup(
                    info,
                    parts,
                    before=unit.start_line if load else 0,
                    inclusive=unit.kind in COMPOUND,
                )
                found.append(_make_use(info, chain, parts, resolved, load=load))
        inner = [
            (b, True)
            for b in unit.imports
            if unit.kind in ("if", "try", "with") and not b.type_checking and b.attr != "*"
        ]
        # imports in function bodies run at call time (those in class bodies, rare, at load
        # time: the index does not tell them apart, so they are ordered like calls)
        inner += [(b, False) for b in unit.local_imports]
        for binding, load in inner:
            if self.index.source_of_module(binding.module) is None:
                continue
            resolved = symbols.follow(info, binding, binding.name, ())
            if resolved.kind in ("definition", "external", "missing", "module"):
                use = _make_use(info, binding.name, [binding.name], resolved, load=load)
                found.append(
                    Use(
                        chain=use.chain,
                        root=use.root,
                        prefix=use.prefix,
                        load=load,
                        found=resolved,
                        crosses=False,
                        line=binding.line or unit.start_line,
                    )
                )
        result = tuple(found)
        self._uses[key] = result
        return result

    def type_tests(self, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        """Chains ``unit`` reads only as the class argument of ``isinstance``/``issubclass``
        (alone or in a tuple) or inside return and local variable annotations (not
        parameter or class-body field annotations: callers build what those name)."""
        key = (info.source, info.module, unit.index)
        found = self._tests.get(key)
        if found is None:
            tree = self.tree(info, unit)
            found = self._tests[key] = type_tests(tree) if tree is not None else frozenset()
        return found

    def alias(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> bool:
        """Whether ``unit`` is a type alias: ``X = List[A]``, ``Union[A, B]`` (a subscript
        of a ``typing``/builtin name): it cannot build an ``A``, so the classes it names are
        only tested against."""
        key = (info.source, info.module, unit.index)
        found = self._aliases.get(key)
        if found is None:
            tree = self.tree(info, unit) if unit.kind == "assign" else None
            found = False
            if tree is not None and len(tree.body) == 1:
                value = getattr(tree.body[0], "value", None)
                if isinstance(value, ast.Subscript) and not any(
                    isinstance(node, ast.Call) for node in ast.walk(value)
                ):
                    chain = dotted(value.value)
                    kind = symbols.lookup(info, chain, before=unit.start_line) if chain else None
                    found = kind is not None and (
                        kind.kind in ("builtin", "typing")
                        or (kind.kind == "external" and kind.target.split(".")[0] in _TYPING)
                    )
            self._aliases[key] = found
        return found

    def lookups(
        self, info: ModuleInfo, unit: Unit, chain: str
    ) -> tuple[tuple[str, ...], bool] | None:
        """How ``unit`` uses the object ``chain`` denotes, when it only looks names up in it.

        ``(constant names, whether some name is computed)`` when every use of ``chain``
        itself is the first argument of ``getattr``/``hasattr`` (``getattr(m, "Mlp")``,
        ``hasattr(m, kind)``), or an attribute chain through it (resolved on its own);
        ``None`` when the object escapes (``vars(m)``, passed on, stored, returned).
        """
        key = ((info.source, info.module, unit.index), chain)
        if key in self._lookups:
            return self._lookups[key]
        tree = self.tree(info, unit)
        found: tuple[tuple[str, ...], bool] | None = None
        if tree is not None:
            found = lookups_only(tree, chain)
        self._lookups[key] = found
        return found

    def words(self, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        """Quoted words in ``unit``'s code: the strings it can use as keys (type strings,
        attribute names).

        A regular expression over the text without its comments and triple-quoted strings
        (docstrings show examples that name other types), not a parse: every unit of every
        closure is read, and a unit can be thousands of lines.
        """
        key = (info.source, info.module, unit.index)
        found = self._words.get(key)
        if found is None:
            text = _PROSE.sub("", self.text(info, unit))
            found = self._words[key] = frozenset(m.group(2) for m in _QUOTED.finditer(text))
        return found

    def text(self, info: ModuleInfo, unit: Unit) -> str:
        """The unit's lines of its file."""
        key = (info.source, info.module)
        lines = self._lines.get(key)
        if lines is None:
            lines = self._lines[key] = self.index.text(info).splitlines(keepends=True)
        return "".join(lines[unit.start_line - 1 : unit.end_line])

    def tree(self, info: ModuleInfo, unit: Unit) -> ast.Module | None:
        """The unit's statements parsed alone (line numbers relative to its first line)."""
        key = (info.source, info.module, unit.index)
        if key in self._trees:
            return self._trees[key]
        text = self.text(info, unit)
        try:
            tree: ast.Module | None = ast.parse(text)
        except SyntaxError:  # a unit sharing a line with another statement (``a = 1; b = 2``)
            tree = None
            if unit.index < 0:  # a method of a class alone (nnrag.extract.methods): indented
                try:
                    tree = ast.parse(textwrap.dedent(text))
                except SyntaxError:
                    tree = None
        self._trees[key] = tree
        return tree

    def position(self, info: ModuleInfo, unit: Unit, name: str) -> tuple[int, int]:
        """Where ``name`` is first read in ``unit`` (its first line if not found)."""
        key = ((info.source, info.module, unit.index), name)
        cached = self._positions.get(key)
        if cached is not None:
            return cached
        where = (unit.start_line, 1)
        tree = self.tree(info, unit) if name else None
        if tree is not None:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id == name:
                    where = (unit.start_line + node.lineno - 1, node.col_offset + 1)
                    break
        self._positions[key] = where
        return where

    def findings(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> tuple[Finding, ...]:
        """Dynamic lookups in ``unit`` that a closure cannot follow (memoized)."""
        key = (info.source, info.module, unit.index)
        cached = self._findings.get(key)
        if cached is not None:
            return cached
        reads = (*unit.load_reads, *unit.call_reads)
        roots = {chain.split(".", 1)[0] for chain in reads}
        found: list[Finding] = []
        registries = {
            root: registry
            for root in sorted(roots)
            if (registry := self._registry(info, unit, root, symbols)) is not None
        }
        if registries or (roots & _DYNAMIC_ROOTS and may_find(self.text(info, unit), roots)):
            tree = self.tree(info, unit)
            if tree is not None:
                found.extend(self._visit(tree, info, unit, symbols, registries))
        result = tuple(found)
        self._findings[key] = result
        return result

    def _visit(
        self,
        tree: ast.Module,
        info: ModuleInfo,
        unit: Unit,
        symbols: Symbols,
        registries: Mapping[str, Registry],
    ) -> Iterator[Finding]:
        reads = set(unit.load_reads) | set(unit.call_reads)

        def at(node: ast.expr, category: Category, message: str) -> Finding:
            where = f"{info.path}:{unit.start_line + node.lineno - 1}:{node.col_offset + 1}"
            return closure_problem(category, message, where=where), None

        found_parents: dict[int, ast.AST] = {}

        def parents() -> dict[int, ast.AST]:
            """Each node's parent, built on first use (only ``globals()``/``vars()`` need it)."""
            if not found_parents:
                found_parents.update(
                    (id(child), node)
                    for node in ast.walk(tree)
                    for child in ast.iter_child_nodes(node)
                )
            return found_parents

        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = dotted(node.func)
                if name in ("getattr", "vars", "dir") and node.args and name in reads:
                    # an internal module object (``vars(aggr)``) becomes a namespace of its
                    # public names (see resolve); the module's own namespace cannot
                    target = dotted(node.args[0])
                    if target == "sys.modules[__name__]":
                        yield at(
                            node,
                            "dynamic-registry",
                            f"{name}({target}{', ...' if name == 'getattr' else ''}) looks names "
                            "up in a source module at "
                            "run time; only the definitions the closure found are inlined",
                        )
                elif (
                    name in ("globals", "vars")
                    and not node.args
                    and name in reads
                    and reads_namespace(node, parents())
                ):
                    yield at(
                        node,
                        "dynamic-registry",
                        f"{name}() reads the module namespace by string; only the definitions "
                        "the closure found are inlined",
                    )
                elif name in ("importlib.import_module", "import_module", "__import__"):
                    yield from self._dynamic_import(node, info, at)
                elif (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr == "get"
                    and dotted(node.func.value) in registries
                    and node.args
                    and not isinstance(node.args[0], ast.Constant)
                ):
                    yield _registry_use(
                        at(node, "dynamic-registry", ""), registries, node.func.value
                    )
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and dotted(node.value) in registries
                and not isinstance(node.slice, ast.Constant)
            ):
                yield _registry_use(at(node, "dynamic-registry", ""), registries, node.value)

    def _dynamic_import(self, node: ast.Call, info: ModuleInfo, at: _At) -> Iterator[Finding]:
        found = import_by_name(node, lambda name: self.index.source_of_module(name) is not None)
        if found is None:
            return
        if not found.served:  # ``__import__``: kept as written
            if found.exact:
                yield at(node, "source-import", f"imports {found.module!r} of the source by name")
            else:
                yield at(
                    node,
                    "dynamic-registry",
                    "imports a module of the source chosen at run time; it cannot be inlined",
                )
        elif found.exact:
            yield at(
                node,
                "dynamic-registry",
                f"imports {found.module!r} of the source by name: the block file resolves it "
                f"to the definitions it carries ({SHIM}); a name it does not carry fails at "
                "run time",
            )
        else:
            yield at(
                node,
                "dynamic-registry",
                "imports a module of the source chosen at run time"
                + (f" ({found.module}*)" if found.module else "")
                + f": the block file resolves it against the modules it carries ({SHIM}); "
                "any other raises ModuleNotFoundError",
            )

    def _registry(
        self, info: ModuleInfo, reader: Unit, root: str, symbols: Symbols
    ) -> Registry | None:
        """The registry module-level dict ``root`` is, if a function of its module fills it."""
        found = symbols.lookup(info, root)
        if found.kind != "definition" or found.module is None or len(found.units) != 1:
            return None
        home, unit = found.module, found.units[0]
        key = (home.source, home.module, found.name)
        if key in self._registries:
            registry = self._registries[key]
        else:
            registry = None
            if unit.kind == "assign":
                registry = self._find_registry(home, unit, found.name, symbols)
            self._registries[key] = registry
        if registry is None or (home.module == info.module and registry.writer in reader.binds):
            return None  # a cache filled by the function that reads it
        return registry

    def _find_registry(
        self, home: ModuleInfo, unit: Unit, name: str, symbols: Symbols
    ) -> Registry | None:
        tree = self.tree(home, unit)
        if tree is None or len(tree.body) != 1 or not is_empty_container(tree.body[0]):
            return None
        for other in home.units:
            if other.kind != "def" or not any(
                c == name or c.startswith(name + ".") for c in other.call_reads
            ):
                continue
            body = self.tree(home, other)
            if body is None or not writes(body, name) or not other.binds:
                continue
            writer = other.binds[0]
            registrations = tuple(
                u
                for u in home.units
                if u is not other
                and any(c == writer or c.startswith(writer + ".") for c in u.load_reads)
            )
            elsewhere = sorted(
                {
                    module.module
                    for module, binding in self._importers().get(writer, ())
                    if module.module != home.module
                    and symbols.lookup(module, binding.name).key == (home.module, writer)
                }
            )
            return Registry(
                name=name,
                home=home,
                writer=writer,
                registrations=registrations,
                elsewhere=tuple(elsewhere),
            )
        return None

    def _importers(self) -> dict[str, list[tuple[ModuleInfo, ImportBinding]]]:
        """Imported attribute name -> (module, binding) of every ``from x import name``."""
        if self._by_attr is None:
            found: dict[str, list[tuple[ModuleInfo, ImportBinding]]] = {}
            for info in self.index.modules():
                for unit in info.units:
                    for binding in (*unit.imports, *unit.local_imports):
                        if binding.attr and binding.attr != "*":
                            found.setdefault(binding.attr, []).append((info, binding))
            self._by_attr = found
        return self._by_attr


@dataclass(frozen=True, slots=True)
class Registry:
    """A module-level dict filled by a function (``@register``) and looked up by key."""

    name: str
    home: ModuleInfo
    writer: str
    registrations: tuple[Unit, ...]
    """Units of the home module that call the writer at load time (they fill the dict)."""
    elsewhere: tuple[str, ...]
    """Other modules that import the writer: their registrations are not in the closure."""


_At = Callable[[ast.expr, Category, str], Finding]


def _registry_use(where: Finding, registries: Mapping[str, Registry], node: ast.expr) -> Finding:
    registry = registries[dotted(node) or ""]
    message = (
        f"looks up {registry.name!r} (a registry filled by {registry.writer}()) with a key "
        f"computed at run time; entries registered in {', '.join(registry.elsewhere[:3])}"
        + (
            f" and {len(registry.elsewhere) - 3} more modules"
            if len(registry.elsewhere) > 3
            else ""
        )
        + " are not inlined"
    )
    return closure_problem(where[0].category, message, where=where[0].location), registry


def _make_use(
    info: ModuleInfo, chain: str, parts: list[str], found: Resolution, *, load: bool
) -> Use:
    home = found.module
    crosses = home is not None and (
        home.module != info.module or found.consumed > 1 or found.name != parts[0]
    )
    return Use(
        chain=chain,
        root=parts[0],
        prefix=".".join(parts[: found.consumed]),
        load=load,
        found=found,
        crosses=crosses,
    )
