"""Sandbox child: the first layer each ``forward`` argument meets, and the input it wants.

``guide = self.gl(guide)`` with ``self.gl`` a ``Linear(512, 128)``: ``guide`` is tokens of
512 features; ``self.proj(x)`` with a ``Conv2d(16, ...)``: ``x`` an image of 16 channels.
Only calls of the block's own layers on the argument itself count: as their input, or handed
on as another argument (``self.attn(x, guide)``: what ``guide`` meets inside ``attn``).
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from torch import nn

from nnrag.validate.probe.layers import first_layer
from nnrag.validate.probe.profiles import Profile
from nnrag.validate.probe.signatures import parsed_source, signature_of
from nnrag.validate.probe.values import tensor_spec


def met_layers(module: nn.Module, names: list[str]) -> dict[str, nn.Module]:
    """For each of ``names`` (``forward``'s arguments), the block's layer that ``forward``
    calls with it first (``self.attr(name, ...)``), before anything assigns to it."""
    tree = parsed_source(type(module).forward)
    func = tree.body[0] if isinstance(tree, ast.Module) and tree.body else None
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    found: dict[str, nn.Module] = {}
    assigned: set[str] = set()
    for stmt in func.body:
        for node in _in_order(stmt):
            layer = _own_layer(module, node.func) if isinstance(node, ast.Call) else None
            if layer is None or not isinstance(node, ast.Call):
                continue
            for i, arg in enumerate(node.args):
                name = arg.id if isinstance(arg, ast.Name) else ""
                if name not in names or name in assigned or name in found:
                    continue
                met = layer if i == 0 else _handed_over(layer, i)
                if met is not None:
                    found[name] = met
        assigned |= {
            t.id
            for node in ast.walk(stmt)
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name)
        }
    return found


def _handed_over(layer: nn.Module, index: int) -> nn.Module | None:
    """The layer a sub-block's ``forward`` calls first with its argument number ``index``
    (``self.attn(x, guide)``: what ``guide`` meets inside ``attn``), one level down."""
    sig = signature_of(layer.forward)
    params = [
        p
        for p in (sig.parameters.values() if sig else ())
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if index >= len(params):
        return None
    name = params[index].name
    return met_layers(layer, [name]).get(name)


def _in_order(stmt: ast.stmt) -> list[ast.AST]:
    """The nodes of one statement, inner calls before the calls that take their results."""
    return sorted(
        ast.walk(stmt),
        key=lambda n: (getattr(n, "end_lineno", 0) or 0, getattr(n, "end_col_offset", 0) or 0),
    )


def _own_layer(module: nn.Module, func: ast.expr) -> nn.Module | None:
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        layer = getattr(module, func.attr, None)
        return layer if isinstance(layer, nn.Module) else None
    return None


def met_inputs(
    module: nn.Module, params: list[inspect.Parameter], profile: Profile
) -> dict[str, dict[str, Any]]:
    """Tensor specs for the ``forward`` arguments whose first layer fixes their shape:
    images of its channels, tokens or vectors of its features."""
    names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    specs: dict[str, dict[str, Any]] = {}
    for name, layer in met_layers(module, names).items():
        kind, size, extra = first_layer(layer)
        if size <= 0:
            continue
        if kind == "image":
            specs[name] = tensor_spec([2, size, profile.img, profile.img])
        elif kind == "signal":
            specs[name] = tensor_spec([2, size, profile.seq * 4])
        elif kind == "tokens":
            specs[name] = tensor_spec([2, *extra, profile.seq, size])
        elif kind == "flat":
            specs[name] = tensor_spec([2, size])
    return specs


def first_met_elsewhere(module: nn.Module, names: list[str]) -> bool:
    """Whether the block's first shape-defining layer (what the first argument's candidates
    follow) is met by another argument, and the first one meets a layer of another shape
    (``guide = self.gl(guide)`` before ``self.proj_conv(x)``): then what the first argument
    meets says more about it."""
    if not names:
        return False
    layers = met_layers(module, names)
    first = layers.get(names[0])
    if first is None:
        return False
    overall = first_layer(module)[:2]
    return first_layer(first)[:2] != overall and any(
        first_layer(layer)[:2] == overall for name, layer in layers.items() if name != names[0]
    )
