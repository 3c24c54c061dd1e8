"""LibCST codemods on users' files: point imports at vendored blocks, inline source imports.

Both are :class:`libcst.codemod.VisitorBasedCodemodCommand` subclasses, so the imports they
schedule with ``AddImportsVisitor`` / ``RemoveImportsVisitor`` are applied after the
transform (an import is removed only where nothing uses it any more). Names are matched by
their qualified name (``QualifiedNameProvider``): ``from timm.layers import Mlp``, ``import
timm.layers as L; L.Mlp``, ``import timm.layers.mlp; timm.layers.mlp.Mlp`` and aliases all
denote ``timm.layers.Mlp`` or ``timm.layers.mlp.Mlp``. Comments and formatting of every
statement not rewritten are kept; a rewritten ``from`` import keeps its trailing comment.

Importing this module imports LibCST: only ``nnrag check --fix`` and ``nnrag vendor`` do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.codemod import (
    Codemod,
    CodemodContext,
    TransformFailure,
    TransformSuccess,
    VisitorBasedCodemodCommand,
    transform_module,
)
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.helpers import get_full_name_for_node
from libcst.metadata import QualifiedName, QualifiedNameProvider, QualifiedNameSource, ScopeProvider

from nnrag.errors import NnragError

__all__ = ["InlineSourceImports", "Target", "VendorImports", "run_codemod"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """Where a vendored definition is imported from: ``from <module> import <name>``."""

    module: str
    name: str


class CodemodError(NnragError, ValueError):
    """A codemod failed on a file (it does not parse, or LibCST could not transform it)."""

    def __init__(self, message: str, *, file: str) -> None:
        super().__init__(f"{file}: {message}")
        self.file = file

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (str(self), self.file))


def _rebuild(message: str, file: str) -> CodemodError:
    error = CodemodError.__new__(CodemodError)
    Exception.__init__(error, message)
    error.file = file
    return error


def run_codemod(
    code: str, make: Callable[[CodemodContext], VisitorBasedCodemodCommand], *, filename: str
) -> tuple[str, list[str]]:
    """``(new code, what changed)``: the codemod ``make(context)`` applied to ``code``."""
    context = CodemodContext(filename=filename)
    command = make(context)
    result = transform_module(command, code)
    if isinstance(result, TransformFailure):
        error = result.error
        raise CodemodError(f"cannot rewrite: {type(error).__name__}: {error}", file=filename)
    if not isinstance(result, TransformSuccess):  # skipped: nothing to do
        return code, []
    changes: list[str] = list(getattr(command, "changes", []))
    return result.code, changes


def _imported(command: VisitorBasedCodemodCommand, node: cst.CSTNode) -> frozenset[QualifiedName]:
    """Qualified names of ``node`` that come from an import (not a local definition)."""
    names = command.get_metadata(QualifiedNameProvider, node, set())
    return frozenset(q for q in names if q.source == QualifiedNameSource.IMPORT)


def _module_name(node: cst.ImportFrom) -> str | None:
    if node.relative or node.module is None:
        return None
    return get_full_name_for_node(node.module)


def _alias_local(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return get_full_name_for_node(alias.name) or ""


def _without(node: cst.ImportFrom, drop: set[int]) -> cst.ImportFrom | None:
    """``node`` without the aliases at ``drop`` (None: none left)."""
    if isinstance(node.names, cst.ImportStar):
        return node
    kept = [alias for n, alias in enumerate(node.names) if n not in drop]
    return _with_names(node, kept) if kept else None


def _with_names(node: cst.ImportFrom, aliases: Sequence[cst.ImportAlias]) -> cst.ImportFrom:
    """``node`` importing ``aliases`` (taken from it or from a statement like it), with a
    comma after each but the last. In parentheses the last keeps its comma (and the comment
    after it) and ends its line as ``node``'s last name did, so ``)`` keeps its place."""
    parenthesized = node.lpar is not None and node.rpar is not None
    if isinstance(node.names, cst.ImportStar) or not parenthesized:
        closing: cst.BaseParenthesizableWhitespace | None = None
    else:
        final = node.names[-1].comma
        rpar = node.rpar
        assert rpar is not None  # parenthesized
        closing = final.whitespace_after if isinstance(final, cst.Comma) else rpar.whitespace_before
    fixed = []
    for number, alias in enumerate(aliases):
        comma = alias.comma
        if number < len(aliases) - 1:
            if not isinstance(comma, cst.Comma):
                comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        elif not (
            parenthesized
            and isinstance(comma, cst.Comma)
            and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)
        ):
            comma = cst.MaybeSentinel.DEFAULT  # one line: no trailing comma
        elif (
            isinstance(comma, cst.Comma)
            and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)
            and isinstance(closing, cst.ParenthesizedWhitespace)
        ):
            comma = comma.with_changes(
                whitespace_after=comma.whitespace_after.with_changes(
                    indent=closing.indent, last_line=closing.last_line
                )
            )
        fixed.append(alias.with_changes(comma=comma))
    changed = node.with_changes(names=fixed)
    last = fixed[-1].comma
    if isinstance(last, cst.Comma) and isinstance(
        last.whitespace_after, cst.ParenthesizedWhitespace
    ):
        changed = changed.with_changes(  # the line break before ")" is the comma's now
            rpar=cst.RightParen(whitespace_before=cst.SimpleWhitespace(""))
        )
    return changed


def _dotted_expr(name: str) -> cst.Attribute | cst.Name:
    node = cst.parse_expression(name)
    if not isinstance(node, cst.Attribute | cst.Name):
        raise ValueError(f"not a dotted name: {name!r}")
    return node


class _RemoveImportsKeepingComments(RemoveImportsVisitor):
    """``RemoveImportsVisitor``, except that the comment and blank lines above a removed
    import statement move to the statement that follows it (LibCST drops them)."""

    def __init__(self, context: CodemodContext) -> None:
        super().__init__(context)
        self._orphans: dict[int, Sequence[cst.EmptyLine]] = {}

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if not updated_node.body:  # LibCST removes it next; its leading lines would go too
            self._orphans[id(original_node)] = original_node.leading_lines
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body, footer = self._adopt(original_node.body, updated_node.body)
        return updated_node.with_changes(body=body, footer=[*footer, *updated_node.footer])

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body, footer = self._adopt(original_node.body, updated_node.body)
        return updated_node.with_changes(body=body, footer=[*footer, *updated_node.footer])

    def _adopt(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement]
    ) -> tuple[list[cst.BaseStatement], list[cst.EmptyLine]]:
        """``updated`` (``original`` minus removed lines, in order) with each removed line's
        leading lines given to the next statement kept; the rest go to the footer."""
        removed = sum(id(statement) in self._orphans for statement in original)
        if not removed or len(original) - removed != len(updated):
            return list(updated), []  # nothing removed here (or not only removals)
        kept = iter(updated)
        result: list[cst.BaseStatement] = []
        pending: list[cst.EmptyLine] = []
        for statement in original:
            if id(statement) in self._orphans:
                pending += self._orphans[id(statement)]
                continue
            node = next(kept)
            if pending and isinstance(node, cst.SimpleStatementLine | cst.BaseCompoundStatement):
                node = node.with_changes(leading_lines=[*pending, *node.leading_lines])
                pending = []
            result.append(node)
        result.extend(kept)
        return result, pending


class _Command(VisitorBasedCodemodCommand):
    """A codemod command whose scheduled import removals keep the comments above them."""

    def _instantiate_and_run(self, transform: type[Codemod], tree: cst.Module) -> cst.Module:
        if transform is RemoveImportsVisitor:
            transform = _RemoveImportsKeepingComments
        return super()._instantiate_and_run(transform, tree)


class InlineSourceImports(_Command):
    """In a vendored block: drop imports of source definitions that nnrag inlined, and read
    each such definition by its flat name (``DP(...)``, ``L.DropPath(...)`` -> ``DropPath``).

    ``flat`` maps a qualified name (``timm.layers.DropPath``) to the inlined flat name.
    """

    DESCRIPTION = "Replace imports of inlined source definitions by the definitions."
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider)

    def __init__(self, context: CodemodContext, flat: Mapping[str, str]) -> None:
        super().__init__(context)
        self.flat = dict(flat)
        self.changes: list[str] = []
        self._in_import = 0

    def visit_Import(self, node: cst.Import) -> None:
        self._in_import += 1

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._in_import += 1

    def leave_Import(
        self, original_node: cst.Import, updated_node: cst.Import
    ) -> cst.Import | cst.RemovalSentinel:
        self._in_import -= 1
        return updated_node

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        self._in_import -= 1
        module = _module_name(original_node)
        if module is None or isinstance(original_node.names, cst.ImportStar):
            return updated_node
        drop = set()
        for number, alias in enumerate(original_node.names):
            name = get_full_name_for_node(alias.name)
            if f"{module}.{name}" in self.flat:
                drop.add(number)
                self.changes.append(
                    f"removed 'from {module} import {name}' (inlined as "
                    f"{self.flat[f'{module}.{name}']})"
                )
        kept = _without(updated_node, drop)
        return cst.RemovalSentinel.REMOVE if kept is None else kept

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self._replace(original_node, updated_node)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        return self._replace(original_node, updated_node)

    def _replace(self, original: cst.CSTNode, updated: cst.BaseExpression) -> cst.BaseExpression:
        if self._in_import:
            return updated
        for qualified in _imported(self, original):
            flat = self.flat.get(qualified.name)
            if flat is None:
                continue
            if isinstance(original, cst.Attribute):
                written = get_full_name_for_node(original) or qualified.name
                self.changes.append(f"{written} -> {flat}")
                root = written.split(".", 1)[0]
                for module, asname in self._modules_bound(root):
                    self.remove_unused_import(module, asname=asname)
            elif isinstance(original, cst.Name) and original.value != flat:
                self.changes.append(f"{original.value} -> {flat}")
            return cst.Name(flat)
        return updated

    def _modules_bound(self, root: str) -> list[tuple[str, str | None]]:
        """``(module, alias)`` of each ``import module [as alias]`` that binds ``root``."""
        scope = self.get_metadata(ScopeProvider, self.module, None)
        found = []
        if scope is not None:
            for assignment in scope.assignments[root]:
                node = getattr(assignment, "node", None)
                if isinstance(node, cst.Import):
                    for alias in node.names:
                        if _alias_local(alias).split(".", 1)[0] == root:
                            asname = root if alias.asname is not None else None
                            found.append((get_full_name_for_node(alias.name) or root, asname))
        return found


class VendorImports(_Command):
    """In a project's own files: import vendored blocks from the vendored folder instead of
    their source package.

    ``target`` maps a qualified name as the file spells it (``timm.layers.Mlp``) to the
    vendored definition it denotes, or None. ``from`` imports are rewritten in place (in an
    ``if TYPE_CHECKING:`` block too); a chain ``L.Mlp`` becomes ``Mlp`` with ``from <vendored
    module> import Mlp`` added; an import of the source package is removed where nothing
    else uses it.
    """

    DESCRIPTION = "Import vendored nnrag blocks from the vendored folder."
    METADATA_DEPENDENCIES = (QualifiedNameProvider, ScopeProvider)

    def __init__(self, context: CodemodContext, target: Callable[[str], Target | None]) -> None:
        super().__init__(context)
        self.target = target
        self.changes: list[str] = []
        self._in_import = 0
        self._taken: set[str] = set()
        self._added: dict[Target, str] = {}

    def visit_Module(self, node: cst.Module) -> None:
        scope = self.get_metadata(ScopeProvider, node, None)
        if scope is None:
            return
        for assignment in scope.assignments:
            self._taken.add(assignment.name)
            statement = getattr(assignment, "node", None)
            if not isinstance(statement, cst.ImportFrom):
                continue
            module = _module_name(statement)
            if module is None or isinstance(statement.names, cst.ImportStar):
                continue
            for alias in statement.names:
                if _alias_local(alias) == assignment.name:
                    found = self.target(f"{module}.{get_full_name_for_node(alias.name)}")
                    if found is not None:  # rewritten to import it: the chain can use it
                        self._added.setdefault(found, assignment.name)

    def visit_Import(self, node: cst.Import) -> None:
        self._in_import += 1

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import:
        self._in_import -= 1
        return updated_node

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._in_import += 1

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom:
        self._in_import -= 1
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        if len(updated_node.body) != 1 or not isinstance(updated_node.body[0], cst.ImportFrom):
            return updated_node
        statement = updated_node.body[0]
        module = _module_name(statement)
        if module is None or isinstance(statement.names, cst.ImportStar):
            return updated_node
        moved: dict[str, list[cst.ImportAlias]] = {}
        drop: set[int] = set()
        for number, alias in enumerate(statement.names):
            name = get_full_name_for_node(alias.name) or ""
            found = self.target(f"{module}.{name}")
            if found is None:
                continue
            drop.add(number)
            local = _alias_local(alias)
            asname = None if local == found.name else cst.AsName(name=cst.Name(local))
            # the alias node itself moves, with the comment after its comma
            moved.setdefault(found.module, []).append(
                alias.with_changes(name=cst.Name(found.name), asname=asname)
            )
            written = f"{name} as {local}" if local != name else name
            self.changes.append(
                f"from {module} import {written} -> from {found.module} import "
                f"{found.name}{f' as {local}' if asname else ''}"
            )
        if not drop:
            return updated_node
        kept = _without(statement, drop)
        lines: list[cst.BaseStatement] = []
        if kept is not None:
            lines.append(updated_node.with_changes(body=[kept]))
        for number, (vendored, aliases) in enumerate(moved.items()):
            new = _with_names(
                statement.with_changes(module=_dotted_expr(vendored), relative=()), aliases
            )
            if kept is None and number == 0:  # it takes the place (and comments) of the old one
                lines.append(updated_node.with_changes(body=[new]))
            else:
                lines.append(cst.SimpleStatementLine(body=[new]))
        return cst.FlattenSentinel(lines)

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if self._in_import:
            return updated_node
        for qualified in _imported(self, original_node):
            found = self.target(qualified.name)
            if found is None:
                continue
            local = self._local_for(found)
            written = get_full_name_for_node(original_node) or qualified.name
            self.changes.append(f"{written} -> {local} (from {found.module} import {found.name})")
            self.remove_unused_import_by_node(original_node)
            return cst.Name(local)
        return updated_node

    def _local_for(self, found: Target) -> str:
        """The name a chain becomes; its import is added once (aliased if the name is taken)."""
        local = self._added.get(found)
        if local is None:
            local = found.name
            number = 1
            while local in self._taken:
                number += 1
                local = f"{found.name}_vendored" + (str(number) if number > 2 else "")
            asname = None if local == found.name else local
            self.add_needed_import(found.module, found.name, asname)
            self._taken.add(local)
            self._added[found] = local
        return local
