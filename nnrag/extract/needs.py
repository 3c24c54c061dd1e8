"""What each unit needs: its reads resolved once per index, and questions about its syntax."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnrag.extract.deadtry import dead_imports
from nnrag.extract.findings import DynamicLookups, Finding
from nnrag.extract.stored import init_keeps, loaded_attributes, stored_names
from nnrag.extract.syntax import (
    assigns_a_call,
    dotted,
    handed_names,
    lookups_only,
    mutates,
    namespace_keys,
    type_tests,
)
from nnrag.index.symbols import Resolution, Symbols
from nnrag.model import ImportBinding, ModuleInfo, Unit

if TYPE_CHECKING:
    from nnrag.index.build import Index


def scanner_for(index: Index) -> UnitScanner:
    """The shared :class:`UnitScanner` of ``index`` (its memos live as long as the index)."""
    return index.analyses.of(UnitScanner, lambda: UnitScanner(index))


UnitKey = tuple[str, str, int]
"""(source, module, unit index)."""

COMPOUND = frozenset({"if", "try", "with"})
_TYPING = frozenset({"typing", "typing_extensions", "collections"})
_QUOTED = re.compile(r"""(['"])([A-Za-z_][\w.:-]{0,79})\1""")
_PROSE = re.compile(r"""(\"\"\"|\'\'\')[\s\S]*?\1|#[^\n]*""")
_WORD = re.compile(r"[A-Za-z_]\w*")


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
    stored: tuple[tuple[UnitKey, str], ...] = ()
    """Functions among ``deps`` it only stores in an attribute, with that attribute: needed
    only once the closure reads it (:mod:`nnrag.extract.stored`)."""
    tested: frozenset[UnitKey] = frozenset()
    """Classes among ``deps`` it only tests against (``isinstance(x, C)``) or names in
    annotations: a stand-in class of the same name does for them (see ``resolve``)."""
    typed: frozenset[UnitKey] = frozenset()
    """Type aliases among ``deps`` (``SampleList = List[C]``) it reads other than as a type
    test or a constructor's parameter annotation (a ``forward(x, samples: SampleList)``
    parameter's): the classes they name are what its methods receive, whose methods they
    may call, so they are real classes, not stand-ins (see ``resolve``)."""
    alias: bool = False
    """Whether the unit is itself a type alias (its ``typed`` count only when it is read
    so)."""
    imported: tuple[tuple[UnitKey, str], ...] = ()
    """Classes and functions among ``deps`` it reaches only by importing them at module
    level under a guard (``try: from x import A, B``), with the name the import binds:
    needed only once code of the closure reads that name (see ``resolve``)."""


class UnitScanner:
    """Per-index memo of what each unit needs, and of its syntax where a scan is needed."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._lines: dict[tuple[str, str], list[str]] = {}
        self._trees: dict[UnitKey, ast.Module | None] = {}
        self._dynamic = DynamicLookups(index, self)
        self._uses: dict[UnitKey, tuple[Use, ...]] = {}
        self._summaries: dict[UnitKey, Summary] = {}
        self._mutators: dict[UnitKey, tuple[Unit, ...]] = {}
        self.reach: dict[UnitKey, frozenset[UnitKey]] = {}
        """Per unit: every unit its functions may run (see ``_CallClosure``)."""
        self._positions: dict[tuple[UnitKey, str], tuple[int, int]] = {}
        self._words: dict[UnitKey, frozenset[str]] = {}
        self._lookups: dict[tuple[UnitKey, str], tuple[tuple[str, ...], bool] | None] = {}
        self._tests: dict[UnitKey, frozenset[str]] = {}
        self._received: dict[UnitKey, frozenset[str]] = {}
        self._aliases: dict[UnitKey, bool] = {}
        self._dead: dict[UnitKey, frozenset[tuple[int, str]]] = {}
        self._looked_up: dict[UnitKey, tuple[tuple[str, bool], ...]] = {}
        self._stored: dict[UnitKey, dict[str, str]] = {}
        self._loaded: dict[tuple[UnitKey, tuple[tuple[int, int], ...]], frozenset[str]] = {}
        self._spoken: dict[UnitKey, frozenset[str]] = {}
        self._importers: dict[tuple[str, str], frozenset[tuple[str, str | None]]] = {}

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
        typed: set[UnitKey] = set()
        stored: dict[UnitKey, str | None] = {}
        imported: dict[UnitKey, str | None] = {}
        findings = self.findings(info, unit, symbols)
        for use in self.uses(info, unit, symbols):
            found = use.found
            home = found.module
            if found.kind == "definition" and home is not None:
                bound = (
                    use.chain
                    if use.line and use.load and unit.kind in COMPOUND
                    else None  # an import of the unit's own text, not a read of its code
                )
                if bound is not None and bound in self.read_roots(unit):
                    bound = None  # the unit's own code reads it (a class defined in the try)
                for dep in found.units:
                    ident = (home.source, home.module, dep.index)
                    lone = bound is not None and dep.kind in {"class", "def"}
                    lone = lone and not self.mutators(home, dep)
                    name = bound if lone else None
                    imported[ident] = name if imported.get(ident, name) == name else None
                attr = (
                    self.stored_names(info, unit, symbols).get(use.chain)
                    if all(dep.kind == "def" for dep in found.units)
                    else None
                )
                for dep in found.units:
                    ident = (home.source, home.module, dep.index)
                    stored[ident] = attr if stored.get(ident, attr) == attr else None
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
                    if (
                        dep.kind == "assign"
                        and use.chain not in self.received(info, unit)
                        and self.alias(home, dep, symbols)
                    ):
                        typed.add((home.source, home.module, dep.index))
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
            stored=tuple((k, a) for k, a in stored.items() if a is not None),
            tested=frozenset(tested - strong),
            typed=frozenset(typed),
            alias=self.alias(info, unit, symbols),
            imported=tuple((k, n) for k, n in imported.items() if n is not None),
        )
        self._summaries[key] = summary
        return summary

    def mutators(self, info: ModuleInfo, unit: Unit) -> tuple[Unit, ...]:
        """Units of ``unit``'s module that change the object it builds, at load time.

        ``Conv = LayerFactory(...)`` followed by ``@Conv.factory_function("conv")`` or
        ``Act.add_factory_class("elu", nn.ELU)`` in the same module: the object only works
        with those registrations, so they come with it; so does ``set_defaults(cfg)`` after
        ``cfg = Node()`` (also when built in a ``try``/``if``): a call that fills the object in
        (a registration in another module is not followed: importing that module is what
        would run it).
        """
        if unit.kind not in ("assign", "if", "try") or not unit.binds:
            return ()
        key = (info.source, info.module, unit.index)
        cached = self._mutators.get(key)
        if cached is None:
            cached = self._mutators[key] = self._find_mutators(info, unit)
        return cached

    def _find_mutators(self, info: ModuleInfo, unit: Unit) -> tuple[Unit, ...]:
        tree = self.tree(info, unit)
        if tree is None or not assigns_a_call(tree.body):
            return ()
        found: list[Unit] = []
        for other in info.units:
            if other.index <= unit.index or other.kind not in ("def", "class", "other"):
                continue
            targets = {c.split(".")[0] for c in other.load_reads} & set(unit.binds)
            if not targets or set(other.binds) & targets:
                continue
            body = self.tree(info, other)
            if body is not None and any(mutates(stmt, targets) for stmt in body.body):
                found.append(other)
        return tuple(found)

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
                if parts[0] == "__all__" and not (load and unit.binds_computed):
                    continue  # the block file has its own; a loop that binds names extends it
                resolved = symbols.lookup(
                    info,
                    parts,
                    before=unit.start_line if load else 0,
                    inclusive=unit.kind in COMPOUND,
                )
                found.append(_make_use(info, chain, parts, resolved, load=load))
        for name, load in self.namespace_names(info, unit):
            resolved = symbols.lookup(info, [name], before=unit.start_line if load else 0)
            found.append(_make_use(info, name, [name], resolved, load=load))
        dead = self.dead_imports(info, unit, symbols)
        inner = [
            (b, True)
            for b in unit.imports
            if unit.kind in ("if", "try", "with")
            and not b.type_checking
            and b.attr != "*"
            and (b.line, b.name) not in dead
        ]
        # imports in function bodies run at call time (those in class bodies, rare, at load
        # time: the index does not tell them apart, so they are ordered like calls)
        inner += [(b, False) for b in unit.local_imports]
        for binding, load in inner:
            if self.index.source_of_module(binding.module) is None:
                continue
            if symbols.absent_import(info, unit, binding):
                continue  # raises ImportError in the original too (emitted as a raise)
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

    def namespace_names(self, info: ModuleInfo, unit: Unit) -> list[tuple[str, bool]]:
        """(name, read at load time) of the definitions of ``unit``'s module that ``unit``
        can look up by a string, so that the closure carries them: a namespace read by a
        partly constant key (``globals()[f"emulate_int{bits}_{method}"]``: every
        ``emulate_int*_*`` definition), and a string handed on with the module's name
        (``register("jitter", __name__, "JITTER")``: ``JITTER``). Memoized: every emission
        asks again for each unit it writes."""
        key = (info.source, info.module, unit.index)
        found = self._looked_up.get(key)
        if found is None:
            found = self._looked_up[key] = tuple(self._namespace_names(info, unit))
        return list(found)

    def _namespace_names(self, info: ModuleInfo, unit: Unit) -> list[tuple[str, bool]]:
        patterned = bool({"globals", "vars"} & self.read_roots(unit))
        handed = "__name__" in self.text(info, unit)  # a substring test: most units have none
        tree = self.tree(info, unit) if patterned or handed else None
        if tree is None:
            return []
        defined = {
            name
            for other in info.units
            if other.kind in ("def", "class", "assign")
            for name in other.binds
        }
        found: dict[str, bool] = {}
        for pattern, load in namespace_keys(tree) if patterned else ():
            for name in sorted(defined):
                if pattern.fullmatch(name) and name not in unit.binds:
                    found[name] = found.get(name, False) or load
        for name, load in handed_names(tree) if handed else ():
            if name in defined and name not in unit.binds:
                found[name] = found.get(name, False) or load
        return sorted(found.items())

    def dead_imports(
        self, info: ModuleInfo, unit: Unit, symbols: Symbols
    ) -> frozenset[tuple[int, str]]:
        """(line, local name) of the import bindings of a ``try`` unit that never bind a
        name the block can read (:mod:`nnrag.extract.deadtry`), memoized."""
        key = (info.source, info.module, unit.index)
        found = self._dead.get(key)
        if found is None:
            tree = self.tree(info, unit) if unit.kind == "try" else None
            found = self._dead[key] = (
                frozenset()
                if tree is None
                else dead_imports(
                    tree,
                    unit,
                    lambda b: symbols.absent_import(info, unit, b),
                    lambda b: self.index.source_of_module(b.module) is not None,
                )
            )
        return found

    def stored_names(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> dict[str, str]:
        """Names ``unit`` only stores in one attribute -> that attribute
        (:func:`nnrag.extract.stored.stored_names`), memoized."""
        key = (info.source, info.module, unit.index)
        found = self._stored.get(key)
        if found is None:
            tree = self.tree(info, unit)

            def keeps(callee: str, keyword: str | int) -> str | None:
                resolved = symbols.lookup(info, callee.split("."), before=0)
                if resolved.kind != "definition" or resolved.module is None:
                    return None
                if len(resolved.units) != 1 or resolved.units[0].kind != "class":
                    return None
                klass = self.tree(resolved.module, resolved.units[0])
                node = klass.body[0] if klass is not None and len(klass.body) == 1 else None
                if not isinstance(node, ast.ClassDef):
                    return None
                init = next(
                    (
                        stmt
                        for stmt in node.body
                        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and stmt.name == "__init__"
                    ),
                    None,
                )
                return None if init is None else init_keeps(init, keyword)

            found = self._stored[key] = {} if tree is None else stored_names(tree, keeps)
        return found

    def loaded(
        self, info: ModuleInfo, unit: Unit, without: tuple[tuple[int, int], ...] = ()
    ) -> frozenset[str]:
        """Attribute names (and short quoted words) ``unit``'s code reads
        (:func:`nnrag.extract.stored.loaded_attributes`), leaving out the statements on the
        lines ``without`` (methods a plain class leaves out), memoized."""
        key = ((info.source, info.module, unit.index), without)
        found = self._loaded.get(key)
        if found is None:
            tree = self.tree(info, unit)
            if tree is None:  # over-approximated from the text: every ``.name`` and word
                text = _PROSE.sub("", self.text(info, unit))
                found = frozenset(re.findall(r"\.\s*([A-Za-z_]\w*)", text)) | frozenset(
                    m.group(2) for m in _QUOTED.finditer(text)
                )
            else:
                offset = unit.start_line - 1
                found = loaded_attributes(
                    _outside(tree, [(a - offset, b - offset) for a, b in without])
                )
            self._loaded[key] = found
        return found

    def type_tests(self, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        """Chains ``unit`` reads only as the class argument of ``isinstance``/``issubclass``
        (alone or in a tuple), as an operand of an identity test (``cfg['type'] is C``: true
        only for the class object itself, which no code of the closure then holds), or
        inside return and local variable annotations and the
        parameter annotations of functions that are not methods (not a method's parameter
        or class-body field annotations: whoever builds the class builds what those name)."""
        key = (info.source, info.module, unit.index)
        found = self._tests.get(key)
        if found is None:
            tree = self.tree(info, unit)
            method = unit.index < 0 and unit.kind == "def"  # a method carried on its own
            found = self._tests[key] = (
                type_tests(tree, method=method) if tree is not None else frozenset()
            )
        return found

    def received(self, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        """Chains ``unit`` reads only as type tests (:meth:`type_tests`) or in constructor
        parameter annotations: the rest of its annotations say what its methods receive."""
        key = (info.source, info.module, unit.index)
        found = self._received.get(key)
        if found is None:
            tree = self.tree(info, unit)
            method = unit.index < 0 and unit.kind == "def"
            found = self._received[key] = (
                type_tests(tree, method=method, constructors=True)
                if tree is not None
                else frozenset()
            )
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

    @staticmethod
    def read_roots(unit: Unit) -> frozenset[str]:
        """The module-level names ``unit``'s code reads (the roots of its chains)."""
        return frozenset(c.split(".", 1)[0] for c in (*unit.load_reads, *unit.call_reads))

    def spoken(self, info: ModuleInfo, unit: Unit) -> frozenset[str]:
        """Every identifier-shaped word of the unit's code and strings (not its docstrings or
        comments), memoized: an over-approximation of the names it can read."""
        key = (info.source, info.module, unit.index)
        found = self._spoken.get(key)
        if found is None:
            text = _PROSE.sub("", self.text(info, unit))
            found = self._spoken[key] = frozenset(_WORD.findall(text))
        return found

    def importers(self, info: ModuleInfo) -> frozenset[tuple[str, str | None]]:
        """(module, attr) of every import binding of ``info``'s units (``*`` for a star
        import, ``None`` for ``import m``), memoized."""
        key = (info.source, info.module)
        found = self._importers.get(key)
        if found is None:
            found = self._importers[key] = frozenset(
                (b.module, b.attr)
                for unit in info.units
                for b in (*unit.imports, *unit.local_imports)
            )
        return found

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

    def findings(self, info: ModuleInfo, unit: Unit, symbols: Symbols) -> tuple[Finding, ...]:
        """Dynamic lookups in ``unit`` that a closure cannot follow (memoized; see
        :mod:`nnrag.extract.findings`)."""
        return self._dynamic.findings(info, unit, symbols)

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


def _outside(tree: ast.Module, spans: list[tuple[int, int]]) -> list[ast.AST]:
    """Subtrees covering ``tree`` but the defs that start inside ``spans``."""
    if not spans:
        return [tree]
    parents: dict[int, ast.AST] = {}
    cut: set[int] = set()
    mixed: set[int] = set()
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            first <= line <= last for first, last in spans
        ):
            cut.add(id(node))
            up = parents.get(id(node))
            while up is not None and id(up) not in mixed:
                mixed.add(id(up))
                up = parents.get(id(up))
    kept: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if id(node) in cut:
            continue
        if id(node) in mixed:
            stack.extend(ast.iter_child_nodes(node))
        else:
            kept.append(node)
    return kept
