"""Sandbox child: constructor calls and forward inputs from a class's docstring example."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from nnrag.validate.probe.values import encode

_PROMPT = re.compile(r"^\s*(>>>|\.\.\.)(?: |$)(.*)$")
_MAX_STATEMENTS = 60
_MAX_ELEMENTS = 2**18
"""An example whose call passes a tensor larger than this (elements: 64 channels of 64 x 64,
not an RGB image of 512 x 512) is skipped: a full-size forward of a full-size model took a
block's whole time budget (about 100 s on a busy machine)."""


@dataclass(frozen=True, slots=True)
class Example:
    """What a docstring example does with the class: the constructor call (plain data only,
    so a recipe keeps it exactly) and, when the example calls the instance, its inputs as
    specs (tensors by shape and dtype, small ones by value)."""

    args: tuple[object, ...] = ()
    kwargs: dict[str, object] = field(default_factory=dict)
    inputs: tuple[list[Any], dict[str, Any]] | None = None


def example_code(cls: type) -> str:
    """The doctest lines (``>>>`` and ``...``) of the class's and its ``__init__``'s
    docstrings, prompts removed, output lines dropped."""
    init = vars(cls).get("__init__")
    texts = [cls.__doc__ or "", getattr(init, "__doc__", None) or ""]
    lines = []
    for text in texts:
        for line in text.splitlines():
            m = _PROMPT.match(line)
            if m is not None:
                lines.append(m.group(2))
    return "\n".join(lines)


def examples(cls: type, module: Any) -> list[Example]:
    """Every call of ``cls`` its docstring examples make (evaluated in the block file's
    namespace; imports only of modules already loaded; nothing after the instance's call)."""
    code = example_code(cls)
    if cls.__name__ not in code:
        return []
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    namespace: dict[str, Any] = dict(vars(module))
    found: list[Example] = []
    instance: str | None = None
    for stmt in tree.body[:_MAX_STATEMENTS]:
        if _imports_new_module(stmt):
            continue
        call = _construction(stmt, cls.__name__)
        if call is not None:
            example = _evaluated(call, namespace)
            if example is None:
                return found
            found.append(example)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else []
            instance = targets[0].id if targets and isinstance(targets[0], ast.Name) else None
            continue
        used = _instance_call(stmt, instance)
        if used is not None and found:
            inputs = _inputs(used, namespace)
            if inputs is _TOO_LARGE:  # a full-size run: not this example
                found.pop()
            else:
                last = found[-1]
                found[-1] = Example(args=last.args, kwargs=last.kwargs, inputs=inputs)
            instance = None
            continue
        if instance is not None and _reads(stmt, instance):
            continue  # ``model.eval()``, printing: the search builds and runs the block itself
        if not _run(stmt, namespace):
            continue
    return found


def _imports_new_module(stmt: ast.stmt) -> bool:
    """An import of a module not loaded yet (the block's own sources are never imported)."""
    if isinstance(stmt, ast.Import):
        return any(alias.name.split(".")[0] not in sys.modules for alias in stmt.names)
    if isinstance(stmt, ast.ImportFrom):
        return stmt.level > 0 or (stmt.module or "").split(".")[0] not in sys.modules
    return False


def _construction(stmt: ast.stmt, name: str) -> ast.Call | None:
    """``x = Name(...)`` (or ``x = something.Name(...)``) of the class."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)):
        return None
    func = stmt.value.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return stmt.value if called == name else None


def _instance_call(stmt: ast.stmt, instance: str | None) -> ast.Call | None:
    """The first call of the instance (``y = m(x)``, ``m.forward(x)``) in the statement."""
    if instance is None:
        return None
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == instance:
            return node
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "forward"
            and isinstance(func.value, ast.Name)
            and func.value.id == instance
        ):
            return node
    return None


def _reads(stmt: ast.stmt, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt))


def _run(stmt: ast.stmt, namespace: dict[str, Any]) -> bool:
    """Run one example statement; ``False`` when it failed (the example goes on without it)."""
    if any(isinstance(n, (ast.For, ast.While, ast.With)) for n in ast.walk(stmt)):
        return False
    try:  # the block's own example, run in the sandbox child like the block itself
        exec(compile(ast.Module([stmt], []), "<docstring example>", "exec"), namespace)
    except Exception:
        return False
    return True


def _evaluated(call: ast.Call, namespace: Mapping[str, Any]) -> Example | None:
    """The call's arguments as values, when all of them evaluate to plain data."""
    try:
        args = tuple(_value(a, namespace) for a in call.args if not isinstance(a, ast.Starred))
        kwargs = {k.arg: _value(k.value, namespace) for k in call.keywords if k.arg is not None}
    except Exception:
        return None
    if len(args) != len(call.args) or len(kwargs) != len(call.keywords):
        return None
    try:  # a recipe must keep the call exactly
        encode([args, kwargs], strict=True)
    except TypeError:
        return None
    if any(isinstance(v, torch.nn.Module) for v in (*args, *kwargs.values())):
        return None
    return Example(args=args, kwargs=kwargs)


def _value(node: ast.expr, namespace: Mapping[str, Any]) -> object:
    return eval(
        compile(ast.Expression(node), "<docstring example>", "eval"), dict(namespace)
    )  # as _run


_TOO_LARGE: Any = object()


def _inputs(call: ast.Call, namespace: Mapping[str, Any]) -> Any:
    """The instance call's arguments as input specs (positional, keyword), when they are
    tensors or plain data; ``None`` when not; ``_TOO_LARGE`` past ``_MAX_ELEMENTS``."""
    try:
        args = [_value(a, namespace) for a in call.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: _value(k.value, namespace) for k in call.keywords if k.arg is not None}
    except Exception:
        return None
    if len(args) != len(call.args) or len(kwargs) != len(call.keywords):
        return None
    values = [*args, *kwargs.values()]
    if any(isinstance(v, torch.Tensor) and v.numel() > _MAX_ELEMENTS for v in values):
        return _TOO_LARGE
    try:
        specs = encode([args, kwargs], strict=True)
    except TypeError:
        return None
    assert isinstance(specs, list)
    encoded_args, encoded_kwargs = specs
    return list(encoded_args), dict(encoded_kwargs["__dict__"])
