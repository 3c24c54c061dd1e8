"""Sandbox child: forward inputs shaped as ``forward``'s docstring documents them.

``pd_bboxes (Tensor): boxes with shape (bs, num_anchors, 4)``, ``image_embedding: Should be
shape B x embedding_dim x h x w``, ``image_pe: with the shape of image_embeddings``: each
documented argument gets a tensor of that shape. Literal sizes are kept (``4``: boxes),
symbols get one value each, the same wherever they appear: the batch 2, a name the block
holds as an int attribute (``num_classes``) that value, heights and widths a small side,
channel-like names the block's width, any other a count of 16 (more than a top-k of a dozen).
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Mapping
from typing import Any

from torch import nn

from nnrag.validate.probe.layers import first_layer
from nnrag.validate.probe.profiles import Profile
from nnrag.validate.probe.values import tensor_spec

_ENTRY = re.compile(r"^(\s*)\*{0,2}(\w+)\s*(?:\(([^\n]*?)\))?\s*:\s*(.*)$")
"""An argument's entry (Google style ``name (type): text``, or ``name: text``)."""
_END = re.compile(r"^\s*(Returns?|Yields?|Raises?|Examples?|Notes?|References?)\s*:?\s*$")
_SHAPE = re.compile(
    r"(?:shape|shaped|size)d?\s*(?:of\s+|is\s+|=\s*|:\s*)?"
    r"[\(\[]((?:[^()\[\]]|\([^()]*\))*)[\)\]]"
)
"""``shape (B, N, 4)``, ``shape [N, 4]``, ``of shape (bs, sum(H_i * W_i), C)``."""
_CROSSED = re.compile(r"(?:shape|shaped)\s+(\w+(?:\s+x\s+\w+|\s*\u00d7\s*\w+)+)")
"""``shape B x C x H x W``."""
_SAME_AS = re.compile(
    r"(?:same shape as|shape of|matching(?: the type and shape of)?)\s+(?:the\s+)?`*(\w+)"
)
"""``with the shape of image_embeddings``: the shape of another documented argument."""
_BATCH = re.compile(r"^(b|bs|bsz|batch|batch_?size|n_?batch)$")
_SPATIAL = re.compile(r"^(h|w)(_?\w{0,2})?$|^(height|width|hh|ww)$")
_WIDTH = re.compile(
    r"^(c|ch|chans?|channels?|d|dims?|d_?model|hidden(_?dim|_?size)?|embed(ding)?_?dims?|e)$"
)
_LEVEL_SIZES = re.compile(r"\[\(\s*H_\{?0\}?\s*,\s*W_\{?0\}?\s*\)", re.I)
"""``[(H_0, W_0), (H_1, W_1), ...]``: the spatial size of each level of a feature pyramid."""
_INDEX_ARGS = re.compile(r"(^|_)(labels?|cls|classes|idx|indices|ids)$")
_MAX_SIZE = 4096
_SIDE = 8
_COUNT = 16


def documented_entries(owner: type, method: str, names: list[str]) -> dict[str, tuple[str, str]]:
    """The documented type and text of each of ``names`` in the docstring of ``owner``'s
    ``method``, or else of the methods it overrides (the nearest first)."""
    found: dict[str, tuple[str, str]] = {}
    for klass in owner.__mro__:
        func = vars(klass).get(method)
        doc = inspect.getdoc(func) if func is not None else None
        if doc:
            found = {**_entries(doc, names), **found}
    return found


def _entries(doc: str, names: list[str]) -> dict[str, tuple[str, str]]:
    """Each of ``names``' entry in one docstring: the type in its parentheses, and its line
    and the lines indented under it."""
    found: dict[str, tuple[str, str]] = {}
    current: str | None = None
    indent = 0
    for line in doc.splitlines():
        if _END.match(line):
            current = None
            continue
        m = _ENTRY.match(line)
        if m is not None and m.group(2) in names and m.group(2) not in found:
            current, indent = m.group(2), len(m.group(1))
            found[current] = ((m.group(3) or "").strip(), m.group(4))
            continue
        if current is not None and line.strip() and len(line) - len(line.lstrip()) > indent:
            kind, text = found[current]
            found[current] = (kind, f"{text} {line.strip()}")
        elif line.strip():
            current = None
    return found


def shape_text(text: str) -> list[str] | str | None:
    """The documented dimensions of one entry (expressions as text), the name of another
    argument whose shape it has, or ``None``."""
    m = _SHAPE.search(text)
    crossed = _CROSSED.search(text)
    if crossed is not None and (m is None or crossed.start() < m.start()):
        return [d.strip() for d in re.split(r"\s+x\s+|\u00d7", crossed.group(1))]
    if m is not None:
        return split_top(m.group(1))
    same = _SAME_AS.search(text)
    return same.group(1) if same is not None else None


def split_top(text: str) -> list[str]:
    """The non-empty comma-separated parts of ``text`` outside brackets (``B, (H, W), C``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += 1 if ch in "([" else -1 if ch in ")]" else 0
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


class Sizes:
    """One value per symbol, the same wherever it appears in a docstring."""

    def __init__(self, module: nn.Module, profile: Profile) -> None:
        self.module = module
        self.profile = profile
        self.values: dict[str, int] = {}

    def of(self, name: str) -> int:
        if name not in self.values:
            self.values[name] = self._value(name)
        return self.values[name]

    def _value(self, name: str) -> int:
        low = name.lower()
        if _BATCH.match(low):
            return 2
        held = getattr(self.module, name, None)
        if isinstance(held, int) and not isinstance(held, bool) and 1 <= held <= _MAX_SIZE:
            return held
        if _SPATIAL.match(low):
            return _SIDE
        if _WIDTH.match(low):
            kind, size, _ = first_layer(self.module)
            if kind == "ids":  # a table of ``size`` rows: its width is the rows' size
                table = next(m for m in self.module.modules() if isinstance(m, nn.Embedding))
                size = table.embedding_dim
            return size if 0 < size <= _MAX_SIZE else self.profile.dim
        return _COUNT

    def dim(self, text: str) -> int | None:
        """The value of one dimension's expression (``4``, ``bs``, ``4*H``, ``sum(H_i * W_i)``),
        or ``None`` when it is not one."""
        if text in ("*", "...", "\u2026"):
            return 2
        try:
            node = ast.parse(text.replace("\u00d7", "*"), mode="eval").body
        except SyntaxError:
            return None
        value = self._eval(node)
        return value if value is not None and 1 <= value <= _MAX_SIZE * 4 else None

    def _eval(self, node: ast.expr) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return self.of(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.FloorDiv)):
            left, right = self._eval(node.left), self._eval(node.right)
            if left is None or right is None or (isinstance(node.op, ast.FloorDiv) and not right):
                return None
            if isinstance(node.op, ast.Mult):
                return left * right
            return left + right if isinstance(node.op, ast.Add) else left // right
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "sum"
            and len(node.args) == 1
        ):
            return self._eval(node.args[0])  # one level: ``sum(H_i * W_i)``
        return None


def documented_inputs(
    module: nn.Module, params: list[inspect.Parameter], profile: Profile
) -> dict[str, Any]:
    """Tensor specs for the ``forward`` arguments whose docstring entry (or a comment in its
    body, :func:`commented_shapes`) gives a shape (or, for a ``forward`` of one argument and
    no entries, the first shape its summary gives); labels and indices as small integers,
    masks as all-true booleans; an argument documented as the ``(H, W)`` of each level
    ``[(H_0, W_0), ...]`` a list of one such pair (``sum(H_i * W_i)`` elsewhere: its area)."""
    names = [p.name for p in params]
    entries = documented_entries(type(module), "forward", names)
    texts = {name: shape_text(text) for name, (_, text) in entries.items()}
    for name, text in commented_shapes(type(module), "forward", names).items():
        if not isinstance(texts.get(name), list):
            texts[name] = shape_text(text)
    required = [
        p.name
        for p in params
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if len(required) == 1 and not entries:  # "Decode x of shape (B, 4 * c1, A) into ..."
        texts[required[0]] = shape_text(_summary(type(module), "forward"))
    sizes = Sizes(module, profile)
    specs: dict[str, Any] = {}
    for name, (_, text) in entries.items():  # ``[(H_0, W_0), ..., (H_{L-1}, W_{L-1})]``
        if _LEVEL_SIZES.search(text):
            specs[name] = [{"__tuple__": [sizes.of("H_0"), sizes.of("W_0")]}]
    for name, dims in texts.items():
        if name in specs:
            continue
        if not isinstance(dims, list) or not dims:
            continue
        shape = [sizes.dim(d) for d in dims]
        if any(v is None for v in shape) or len(shape) > 6:
            continue
        specs[name] = _spec(name, [int(v) for v in shape if v is not None])
    for name, other in texts.items():  # ``with the shape of image_embeddings``
        if isinstance(other, str) and isinstance(specs.get(other), dict) and name not in specs:
            specs[name] = _spec(name, list(specs[other]["shape"]))
    return specs


_COMMENT = re.compile(r"^\s*#\s*`*(\w+)`*\s*(?:(?:has|is of|of|with)\s+)?(shape\b.*|:\s*[\(\[].*)$")
"""``# prompt has shape (seq, bs, d_model)``, ``# x: (B, C, H, W)``."""


def commented_shapes(owner: type, method: str, names: list[str]) -> dict[str, str]:
    """The shape text of each of ``names`` a comment in the method's body gives before the
    body first assigns to it (``# prompt has shape (seq, bs, d_model)``), for the method of
    ``owner`` or else the nearest one it overrides."""
    for klass in owner.__mro__:
        func = vars(klass).get(method)
        if func is None:
            continue
        try:
            lines, _ = inspect.getsourcelines(func)
        except (OSError, TypeError):
            return {}
        found: dict[str, str] = {}
        assigned: set[str] = set()
        for line in lines[1:]:
            m = _COMMENT.match(line)
            if m is not None and m.group(1) in names and m.group(1) not in assigned:
                found.setdefault(
                    m.group(1), "shape " + m.group(2).lstrip(":").removeprefix("shape")
                )
            assigned |= {n for n in names if re.match(rf"\s*{n}\s*(,[^=]*)?=[^=]", line)}
        return found
    return {}


_MISSING = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.*)$", re.M)
"""``pair_overlaps() missing 2 required positional arguments: 'pd_kpts' and 'gt_kpts'``."""


def passed_on_inputs(
    message: str,
    module: nn.Module,
    params: list[inspect.Parameter],
    kwargs: dict[str, Any],
    profile: Profile,
) -> dict[str, Any] | None:
    """The keyword inputs again with the arguments a method ``forward`` hands its ``**kwargs``
    on to says it misses (``self.match(..., **extra)``), each a tensor of the shape the
    class's docstring gives it (``call it with ``proto`` (b, nm, mh, mw)``), else like the
    first documented one; ``None`` when ``forward`` takes no ``**kwargs`` or names none."""
    m = _MISSING.search(message)
    if m is None or not any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    known = {p.name for p in params} | set(kwargs)
    names = [n for n in re.findall(r"'(\w+)'", m.group(1)) if n not in known]
    if not names:
        return None
    doc = " ".join(inspect.getdoc(klass) or "" for klass in type(module).__mro__[:-1])
    sizes = Sizes(module, profile)
    given: dict[str, Any] = {}
    for name in names:
        found = re.search(rf"``{name}``\s*[\(\[]((?:[^()\[\]]|\([^()]*\))*)[\)\]]", doc)
        shape = [sizes.dim(d) for d in split_top(found.group(1))] if found else []
        if not shape or any(v is None for v in shape) or len(shape) > 6:
            shape = [2, _COUNT, profile.dim]
        given[name] = _spec(name, [int(v) for v in shape if v is not None])
    return {**kwargs, **given}


def _summary(owner: type, method: str) -> str:
    """The first paragraph of the method's docstring (its own or the overridden one's)."""
    doc = inspect.getdoc(getattr(owner, method, None)) or ""
    return doc.split("\n\n", 1)[0]


def _spec(name: str, shape: list[int]) -> dict[str, Any]:
    low = name.lower()
    if "mask" in low:
        return tensor_spec(shape, "bool")
    if _INDEX_ARGS.search(low):
        return tensor_spec(shape, "int64", 2)
    return tensor_spec(shape)


def first_documented(
    params: list[inspect.Parameter], specs: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The spec of the first argument ``forward`` requires, when it is a documented tensor."""
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        found = specs.get(p.name)
        return found if isinstance(found, dict) else None
    return None


def documented_types(owner: type, method: str, names: list[str]) -> dict[str, str]:
    """The type each of ``names`` is documented with (``x (list[torch.Tensor]): ...``),
    where it names one: a stand-in for a missing annotation."""
    entries = documented_entries(owner, method, names)
    return {
        name: kind.removesuffix(", optional")
        for name, (kind, _) in entries.items()
        if kind and _TYPE.fullmatch(kind.removesuffix(", optional"))
    }


_TYPE = re.compile(r"[\w.]+(\[[\w.\[\], |]*\])?( \| [\w.]+(\[[\w.\[\], |]*\])?)*")
"""A type expression (``torch.Tensor``, ``list[torch.Tensor] | None``), not prose."""
