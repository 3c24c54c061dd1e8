"""Sandbox child: another branch of the option whose ``if`` holds the constructor statement
that raised (``if ws is None: ...  elif ws == 1: ...``: ``ws=1``)."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import traceback
from typing import Any

from nnrag.validate.probe.args import Synth
from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.profiles import PROFILES
from nnrag.validate.probe.signatures import signature_of

_NONE = object()
"""No constant (a test that compares with something else)."""


def other_branch(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: the statement of ``cls``'s constructor that raised sits in a branch of an
    ``if``/``elif`` chain that tests a parameter against constants (``if ws is None:``,
    ``elif ws == 1:``): the parameter set to a constant of another test of the chain (else,
    for ``is None``, to a value by its name) — a configuration the block supports without
    the failing part. Once per parameter (a candidate that set it is not changed again)."""
    if ctor.origin != "synthesized":
        return None
    init = vars(cls).get("__init__") if isinstance(cls, type) else None
    code = getattr(init, "__code__", None)
    line = _raising_line(error, code)
    tree = _parsed(init)
    sig = signature_of(cls)
    if line is None or tree is None or sig is None or code is None:
        return None
    line -= code.co_firstlineno - 1
    for chain in _chains_around(tree, line):
        for name, constants, taken in chain:
            param = sig.parameters.get(name)
            if param is None or name in ctor.kwargs or param.default is param.empty:
                continue
            current = param.default
            others = [c for c in constants if c is not _NONE and c != current]
            if others:
                return ctor.with_kwargs({name: others[0]})
            if taken and current is None:
                synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
                return ctor.with_kwargs({name: synth.field(name)})
    return None


def _raising_line(error: BaseException, code: Any) -> int | None:
    """The line of ``code`` (a constructor) active when ``error`` was raised, else ``None``."""
    found = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code is code:
            found = lineno
    return found


def _parsed(init: Any) -> ast.AST | None:
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return None


Test = tuple[str, list[object], bool]
"""(parameter, the constants its tests in a chain compare it with, whether the branch that
holds the failing line is the one its ``is None`` test takes)."""


def _chains_around(tree: ast.AST, line: int) -> list[list[Test]]:
    """For each ``if`` chain whose branches hold ``line`` (innermost first), the parameters
    its tests compare with constants."""
    found: list[list[Test]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or isinstance(getattr(node, "parent", None), ast.If):
            continue
        links = _links(node)
        if not any(_holds(body, line) for _, body in links):
            continue
        tests: dict[str, Test] = {}
        for test, body in links:
            compared = _compared(test) if test is not None else None
            if compared is None:
                continue
            name, constant, is_none = compared
            _, constants, taken = tests.get(name, (name, [], False))
            tests[name] = (
                name,
                [*constants, constant],
                taken or (is_none and _holds(body, line)),
            )
        if tests:
            found.append(list(tests.values()))
    return list(reversed(found))


def _links(node: ast.If) -> list[tuple[ast.expr | None, list[ast.stmt]]]:
    """The chain's (test, body) pairs, the last ``else`` with no test."""
    links: list[tuple[ast.expr | None, list[ast.stmt]]] = []
    current: ast.If | None = node
    while current is not None:
        links.append((current.test, current.body))
        rest = current.orelse
        if len(rest) == 1 and isinstance(rest[0], ast.If):
            rest[0].parent = current  # type: ignore[attr-defined]  # marks an ``elif`` link
            current = rest[0]
        else:
            if rest:
                links.append((None, rest))
            current = None
    return links


def _holds(body: list[ast.stmt], line: int) -> bool:
    return any(s.lineno <= line <= (s.end_lineno or s.lineno) for s in body)


def _compared(test: ast.expr) -> tuple[str, object, bool] | None:
    """(parameter, constant, whether it is an ``is None`` test) for ``p is None``,
    ``p == 1``, ``self.p == 'x'``; else ``None``."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.Eq))
        and isinstance(test.comparators[0], ast.Constant)
    ):
        return None
    left = test.left
    if isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name):
        left = ast.Name(left.attr) if left.value.id == "self" else left
    if not isinstance(left, ast.Name):
        return None
    constant = test.comparators[0].value
    return left.id, constant, constant is None and isinstance(test.ops[0], ast.Is)


__all__ = ["other_branch"]
