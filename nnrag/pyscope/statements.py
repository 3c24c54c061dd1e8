"""The scope walk's statement handlers: imports, assignments, loops, branches, match patterns."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from nnrag.pyscope.tree import CALL, LAZY, Assignment, Scope, is_type_checking


class StatementWalk:
    """The statement handlers of :class:`nnrag.pyscope.scopes.Walker` (which mixes them in
    and keeps the state and the primitives they use: ``visit``, ``_bind``, ``_read``)."""

    scope: Scope
    imports: list[Assignment]
    time: int
    conditional: bool
    type_checking: bool
    annotation: int

    if TYPE_CHECKING:

        def visit(self, node: ast.AST) -> None: ...
        def generic(self, node: ast.AST) -> None: ...
        def _visit_all(self, nodes: list[ast.stmt] | list[ast.expr]) -> None: ...
        def _read(self, name: str, chain: str, node: ast.Name) -> None: ...
        def _annotation(self, node: ast.expr | None, *, evaluated: bool) -> None: ...
        def _bind(
            self,
            name: str,
            node: ast.AST,
            kind: str,
            statement: ast.stmt | None = None,
            *,
            into: Scope | None = None,
            record: bool = True,
        ) -> Assignment: ...

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        is_from = isinstance(node, ast.ImportFrom)
        for alias in node.names:
            if is_from and alias.name == "*":
                star = self._bind("*", alias, "import", node, into=self.scope, record=False)
                self.imports.append(star)
                continue
            local = alias.asname or (alias.name if is_from else alias.name.partition(".")[0])
            self.imports.append(self._bind(local, alias, "import", node))

    def _assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        self._visit_all(node.targets)

    def _annassign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        kind = self.scope.kind
        self._annotation(node.annotation, evaluated=kind in ("module", "class"))
        target = node.target
        if isinstance(target, ast.Name):
            if node.value is not None or kind not in ("module", "class"):
                self._bind(target.id, target, "store")
            elif node.simple:
                self._bind(target.id, target, "annotation")
        else:
            self.visit(target)

    def _augassign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        target = node.target
        if isinstance(target, ast.Name):
            self._read(target.id, target.id, target)
            self._bind(target.id, target, "store")
        else:
            self.visit(target)

    def _type_alias(self, node: ast.AST) -> None:
        saved = self.time
        self.time = CALL  # the value is evaluated lazily
        self.visit(node.value)  # type: ignore[attr-defined]  # ast.TypeAlias on 3.12+
        self.time = saved
        self.visit(node.name)  # type: ignore[attr-defined]  # ast.TypeAlias on 3.12+

    def _for(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        saved = self.conditional
        self.conditional = True
        self.visit(node.target)
        self._visit_all(node.body)
        self._visit_all(node.orelse)
        self.conditional = saved

    def _if(self, node: ast.If) -> None:
        self.visit(node.test)
        saved_conditional, saved_checking = self.conditional, self.type_checking
        test = node.test
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        checking = is_type_checking(test.operand if isinstance(test, ast.UnaryOp) else test)
        saved_annotation = self.annotation
        self.conditional = True
        self._checking(saved_checking or (checking and not negated), saved_annotation)
        self._visit_all(node.body)
        self._checking(saved_checking or (checking and negated), saved_annotation)
        self._visit_all(node.orelse)
        self.conditional, self.type_checking = saved_conditional, saved_checking
        self.annotation = saved_annotation

    def _checking(self, checking: bool, annotation: int) -> None:
        """Enter a branch: under ``TYPE_CHECKING`` its reads are never evaluated (``LAZY``,
        as an annotation: ``if TYPE_CHECKING: assert isinstance(x, Only)`` needs no binding)."""
        self.type_checking = checking
        self.annotation = LAZY if checking else annotation

    def _conditional(self, node: ast.AST) -> None:
        saved = self.conditional
        self.conditional = True
        self.generic(node)
        self.conditional = saved

    def _handler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._bind(node.name, node, "except")
        self._visit_all(node.body)

    def _match_capture(self, node: ast.MatchAs | ast.MatchStar) -> None:
        pattern = getattr(node, "pattern", None)
        if pattern is not None:
            self.visit(pattern)
        if node.name:
            self._bind(node.name, node, "match")

    def _match_mapping(self, node: ast.MatchMapping) -> None:
        self._visit_all(node.keys)
        for pattern in node.patterns:
            self.visit(pattern)
        if node.rest:
            self._bind(node.rest, node, "match")
