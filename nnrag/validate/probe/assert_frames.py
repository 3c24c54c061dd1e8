"""Sandbox child: the frames of a failing constructor ``assert`` and where its names came from.

From the constructor's frame down to the assert's, each name of the assert is followed back
through the calls that passed it (by keyword, by position, through ``**kwargs``, kept as
``self.x``) to the constructor parameter it came in as.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import os
import textwrap
import types
from dataclasses import dataclass
from typing import Any

_PROBE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of the failing call chain, from the constructor down to the assert."""

    code: types.CodeType
    line: int
    names: dict[str, Any]
    scope: dict[str, Any]


def frames_of(cls: type, error: BaseException) -> list[Frame]:
    """The frames from ``cls``'s constructor (the first ``__init__`` of its classes) to the
    one that raised, without the probe's own (its recording wrappers)."""
    inits = {
        inspect.unwrap(init).__code__
        for klass in getattr(cls, "__mro__", ())
        if inspect.isfunction(init := vars(klass).get("__init__"))
    }
    frames: list[Frame] = []
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        own = os.path.dirname(os.path.abspath(code.co_filename)) == _PROBE_DIR
        if (frames or code in inits) and not own:
            frames.append(Frame(code, tb.tb_lineno, dict(frame.f_locals), frame.f_globals))
        tb = tb.tb_next
    return frames


def function_tree(frame: Frame) -> tuple[ast.AST, int] | None:
    """The parsed function of ``frame`` and the file line of its first line."""
    tree = _parsed(frame.code)
    return None if tree is None else (tree, frame.code.co_firstlineno)


def _parsed(code: types.CodeType) -> ast.AST | None:
    """The parsed source of the function of ``code`` (``None`` when it has none)."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError):
        return None


def failing_asserts(frame: Frame) -> list[ast.Assert]:
    """The ``assert`` statement (all its lines) that raised in ``frame``, then the ones right
    after it in its block (they test the same values: one candidate can hold them all);
    empty when the source is not there."""
    found = function_tree(frame)
    if found is None:
        return []
    tree, first = found
    line = frame.line - first + 1
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            for i, statement in enumerate(block):
                if isinstance(statement, ast.Assert) and _spans(statement, line):
                    after = itertools.takewhile(lambda s: isinstance(s, ast.Assert), block[i:])
                    return [s for s in after if isinstance(s, ast.Assert)]
    return []


def _spans(node: ast.AST, line: int) -> bool:
    start: int = getattr(node, "lineno", 0)
    end: int = getattr(node, "end_lineno", None) or start
    return start <= line <= end


def _arguments(code: types.CodeType) -> list[str]:
    return list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])


def _var_keyword(code: types.CodeType) -> str | None:
    if not code.co_flags & inspect.CO_VARKEYWORDS:
        return None
    index = code.co_argcount + code.co_kwonlyargcount
    index += bool(code.co_flags & inspect.CO_VARARGS)
    return code.co_varnames[index]


EVERY = "*"
"""The path step of a loop variable: every item (``for d in paths: assert d in (...)``)."""
Origin = tuple[str, tuple[str | int, ...]]
"""A constructor parameter and the keys or indexes into it (``("cfg", ("stem", 0))``)."""


def origin(frames: list[Frame], k: int, node: ast.expr) -> Origin | None:
    """The constructor parameter (and the item of it) whose value ``node`` of frame ``k``
    is: a parameter of that function, ``self.x`` where ``self.x = x`` of one, ``p[0]`` or
    ``p["key"]`` of one, a local assigned once from one, or the variable of a loop over
    one (every item); else ``None``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
        outer = origin(frames, k, node.value) if isinstance(key, (str, int)) else None
        return None if outer is None else (outer[0], (*outer[1], key))  # type: ignore[arg-type]
    name = node.id if isinstance(node, ast.Name) else None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "self":
            for j in range(k, -1, -1):  # set in this function or a constructor above
                held = _held(frames[j].code, node.attr)
                if held is not None:
                    return _parameter_origin(frames, j, held)
            found = _held_by_base(frames[0], node.attr)
            return None if found is None else (found, ())
        return None
    if name is None:
        return None
    if name not in _arguments(frames[k].code):
        alias = _assigned_once(frames[k], name)
        if isinstance(alias, ast.Subscript):
            return origin(frames, k, alias)
        outer = origin(frames, k, alias.iter) if isinstance(alias, ast.For) else None
        return None if outer is None else (outer[0], (*outer[1], EVERY))
    return _parameter_origin(frames, k, name)


def _assigned_once(frame: Frame, name: str) -> ast.Subscript | ast.For | None:
    """The item expression (``cfg["stem_type"]``) a local of ``frame``'s function is
    assigned from, or the loop it is the variable of, when it is bound there once only."""
    found = function_tree(frame)
    if found is None:
        return None
    stores = [
        n
        for n in ast.walk(found[0])
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
    ]
    binds = [
        n
        for n in ast.walk(found[0])
        if (isinstance(n, ast.Assign) and len(n.targets) == 1 and _is_name(n.targets[0], name))
        or (isinstance(n, ast.For) and _is_name(n.target, name))
    ]
    if len(stores) != 1 or len(binds) != 1:
        return None
    bind = binds[0]
    if isinstance(bind, ast.For):
        return bind
    value = getattr(bind, "value", None)
    return value if isinstance(value, ast.Subscript) else None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _held_by_base(constructor: Frame, attr: str) -> str | None:
    """The parameter a base class's ``__init__`` (run and returned before the assert) keeps
    as ``self.<attr>``, when the constructor takes it (by name or in its ``**kwargs``)."""
    owner = constructor.names.get("self")
    for klass in type(owner).__mro__ if owner is not None else ():
        init = vars(klass).get("__init__")
        if not inspect.isfunction(init):
            continue
        held = _held(inspect.unwrap(init).__code__, attr)
        code = constructor.code
        if held is not None and (held in _arguments(code) or _var_keyword(code)):
            return held
    return None


def _held(code: types.CodeType, attr: str) -> str | None:
    """The parameter ``self.<attr> = <parameter>`` assigns in the function of ``code``."""
    tree = _parsed(code)
    if tree is None:
        return None
    arguments = _arguments(code)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id in arguments
            and any(
                isinstance(t, ast.Attribute)
                and t.attr == attr
                and getattr(t.value, "id", "") == "self"
                for t in node.targets
            )
        ):
            return node.value.id
    return None


def _parameter_origin(frames: list[Frame], k: int, name: str) -> Origin | None:
    """Parameter ``name`` of frame ``k``'s function followed up the calls that passed it."""
    if k == 0:
        return name, ()
    callee, caller = frames[k].code, frames[k - 1]
    call = _call(caller, callee)
    if call is None:
        return None
    passed = _passed(call, callee, name)
    if passed is None:
        through = _var_keyword(caller.code)
        spreads = any(
            kw.arg is None and getattr(kw.value, "id", None) == through for kw in call.keywords
        )
        return _parameter_origin(frames, k - 1, name) if through and spreads else None
    return origin(frames, k - 1, passed)


def _call(caller: Frame, callee: types.CodeType) -> ast.Call | None:
    """The call on the caller's failing line that entered ``callee``: by the called name
    (a class's, ``super().__init__``, a method's), the innermost."""
    found = function_tree(caller)
    if found is None:
        return None
    tree, first = found
    line = caller.line - first + 1
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _spans(n, line)]
    named = [c for c in calls if _calls_code(c, callee)]
    chosen = named or calls
    return min(chosen, key=_span, default=None)


def _calls_code(call: ast.Call, callee: types.CodeType) -> bool:
    func = call.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    if callee.co_name == "__init__":
        return called == "__init__" or called[:1].isupper()
    return bool(called == callee.co_name)


def _span(node: ast.AST) -> tuple[int, int]:
    lines = (getattr(node, "end_lineno", 0) or 0) - getattr(node, "lineno", 0)
    return lines, (getattr(node, "end_col_offset", 0) or 0) - getattr(node, "col_offset", 0)


def _passed(call: ast.Call, callee: types.CodeType, name: str) -> ast.expr | None:
    """The caller's expression bound to ``callee``'s parameter ``name`` by ``call``."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    params = _arguments(callee)[: callee.co_argcount]
    explicit_self = bool(call.args) and getattr(call.args[0], "id", "") in {"self", "cls"}
    if params[:1] and params[0] in {"self", "cls"} and not explicit_self:
        params = params[1:]
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if position < len(params) and params[position] == name:
            return arg
    return None
