"""Sandbox child: constructor values that satisfy the ``assert`` a constructor failed.

The failing ``assert`` (in ``__init__`` or in what it called) is read whole, with the
values its names had in its frame; each name is followed back through the calls
(``Base.__init__(x, **kwargs)``, ``self._init_inputs(in_channels)``, ``Part(cfg=self.cfg)``,
``Pool(directions[0])``, ``kind = cfg["kind"]``, ``for d in paths``) to the constructor
parameter (or the item of it) it came in as (:mod:`~nnrag.validate.probe.assert_frames`);
one rule per kind of test then gives it a value that holds the test:

- ``isinstance(p, (list, tuple))``: a list (a scalar repeated); ``dict``: a plain dict;
- ``len(a) == len(b) == n``: lists of one length; ``len(a) > len(b)``: longer;
- ``p in (c1, c2)`` / ``p in TABLE``: the first choice (a table's first key);
- ``set(p) == {keys}``: a dict with those keys, taken from a table of such dicts;
- ``0 < p <= 1``, ``p != -1``, ``p == c``: a value within the bounds;
- ``a % b == 0``: ``a`` rounded up to a multiple of ``b``;
- ``a is None or ...``: ``None``.

Values are plain data (numbers, strings, lists, dicts), so recipes stay lossless.
"""

from __future__ import annotations

import ast
import inspect
import math
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from nnrag.validate.probe.assert_frames import (
    EVERY,
    Frame,
    failing_asserts,
    frames_of,
    origin,
)
from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.profiles import MISSING, PROFILES, int_for

_MAX_ITEMS = 8
"""Longest list a length rule makes (per-stage settings of a small block)."""
_PURE = frozenset({"len", "set", "isinstance", "list", "tuple", "sorted", "sum", "min", "max"})
"""The calls an assert's parts may make to be evaluated (builtins without side effects)."""


@dataclass(slots=True)
class _Scene:
    """The failing assert's frames, the values set so far and the parameters they go to."""

    frames: list[Frame]
    arguments: dict[str, object] = field(default_factory=dict)
    """The constructor call's arguments by parameter name (a recipe can write them, and
    lists of them)."""
    changes: dict[str, object] = field(default_factory=dict)
    given: dict[str, object] = field(default_factory=dict)
    """New values by the assert's spelling of them (``"self.levels"``)."""

    def value(self, node: ast.expr) -> object:
        """``node`` evaluated in the assert's frame with the values set so far; ``MISSING``
        when it cannot be (or would call more than pure builtins)."""
        key = ast.unparse(node)
        if key in self.given:
            return self.given[key]
        if not _pure(node):
            return MISSING
        frame = self.frames[-1]
        names = dict(frame.names)
        swapped = _Swap(self.given, names).visit(ast.parse(key, mode="eval"))
        try:
            code = compile(ast.fix_missing_locations(swapped), "<assert>", "eval")
            return eval(code, dict(frame.scope), names)  # the block's own test, pure
        except Exception:
            return MISSING

    def set(self, node: ast.expr, value: object) -> bool:
        """Give the parameter ``node`` came in as ``value``; ``False`` when it did not come
        from one, or ``value`` is not plain data or changes nothing."""
        found = origin(self.frames, len(self.frames) - 1, node)
        current = self.value(node)
        if found is None or (type(current) is type(value) and current == value):
            return False
        param, path = found
        whole = _with_item(self.argument(param), path, value)
        if whole is MISSING or not _plain(whole, list(self.arguments.values())):
            return False
        self.changes[param] = whole
        self.given[ast.unparse(node)] = value
        return True

    def argument(self, param: str) -> object:
        """The value parameter ``param`` has so far: changed, given, or its default."""
        if param in self.changes:
            return self.changes[param]
        if param in self.arguments:
            return self.arguments[param]
        return self.frames[0].names.get(param, MISSING)


class _Swap(ast.NodeTransformer):
    """Replaces the expressions already given a value by names bound to it."""

    def __init__(self, given: Mapping[str, object], names: dict[str, Any]) -> None:
        self.given = given
        self.names = names

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and ast.unparse(node) in self.given:
            name = f"_nnrag_given_{len(self.names)}"
            self.names[name] = self.given[ast.unparse(node)]
            return ast.Name(id=name, ctx=ast.Load())
        return super().generic_visit(node)


def asserted_ctor(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: the constructor call with the values the failing ``assert`` asks of its
    parameters (see the module docstring); ``None`` when no rule applies."""
    if ctor.origin != "synthesized" or not isinstance(error, AssertionError):
        return None
    frames = frames_of(cls, error)
    statements = failing_asserts(frames[-1]) if frames else []
    given = dict(zip(_positional(cls), ctor.args, strict=False))
    scene = _Scene(frames, {**given, **ctor.kwargs})
    for i, statement in enumerate(statements):
        if i == 0 or (scene.changes and scene.value(statement.test) is not True):
            _satisfy(scene, statement.test)
    return _applied(ctor, cls, scene.changes) if scene.changes else None


def _satisfy(scene: _Scene, test: ast.expr) -> bool:
    """Apply the rule for ``test`` (each failing part of an ``and``; the first part of an
    ``or`` that can be made to hold); ``True`` when a parameter changed."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        changed = False
        for part in test.values:
            if scene.value(part) is not True:
                changed = _satisfy(scene, part) or changed
        return changed
    if isinstance(test, ast.BoolOp):
        nones = [p for p in test.values if _is_none_test(p)]
        return any(scene.set(p.left, None) for p in nones) or any(  # type: ignore[attr-defined]
            _satisfy(scene, p) for p in test.values
        )
    return any(rule(scene, test) for rule in _RULES)


def _is_none_test(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Is)
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
    )


# --------------------------------------------------------------------------- the rules


def instance_of(scene: _Scene, test: ast.expr) -> bool:
    """``isinstance(p, (list, tuple))``: a list (a scalar repeated twice), ``tuple``: a
    tuple; ``dict``: a plain dict of a namespace or mapping; ``int``/``float``: a number."""
    if not (_called(test, "isinstance") and len(test.args) == 2):  # type: ignore[attr-defined]
        return False
    node, kinds = test.args  # type: ignore[attr-defined]
    found = scene.value(kinds)
    wanted = found if isinstance(found, tuple) else (found,)
    value = scene.value(node)
    if value is MISSING or value is None or not all(isinstance(w, type) for w in wanted):
        return False
    if isinstance(value, wanted):
        return False
    new: object = MISSING
    if list in wanted or tuple in wanted:
        items = list(value) if isinstance(value, (list, tuple)) else [value, value]
        new = items if list in wanted else tuple(items)
    elif dict in wanted:
        if isinstance(value, types.SimpleNamespace):
            new = dict(vars(value))
        elif isinstance(value, Mapping):
            new = dict(value)
    elif float in wanted and isinstance(value, int):
        new = float(value)
    elif int in wanted and isinstance(value, (list, tuple)) and value:
        new = value[0]
    return new is not MISSING and scene.set(node, new)


def equal_lengths(scene: _Scene, test: ast.expr) -> bool:
    """``len(a) == len(b) == n``: every list made ``n`` long (``n`` a number on either side,
    else the first list's length); a size parameter too large for a small block is set to
    the lists' length instead."""
    if not (isinstance(test, ast.Compare) and all(isinstance(o, ast.Eq) for o in test.ops)):
        return False
    sides = [test.left, *test.comparators]
    measured = [s.args[0] for s in sides if _called(s, "len") and len(s.args) == 1]  # type: ignore[attr-defined]
    sizes = [s for s in sides if not _called(s, "len")]
    if not measured or len(sizes) > 1:
        return False
    lengths = [_length(scene.value(m)) for m in measured]
    count = scene.value(sizes[0]) if sizes else next((n for n in lengths if n), None)
    if not _whole(count):
        return False
    if sizes and not 0 < count <= _MAX_ITEMS:
        first = next((n for n in lengths if n), None)
        return first is not None and scene.set(sizes[0], first)
    changed = [scene.set(m, _resized(scene.value(m), count)) for m in measured]
    return any(changed)


def ordered(scene: _Scene, test: ast.expr) -> bool:
    """``0 < p <= 1``, ``len(a) > len(b)``, ``0 <= self.level < self.levels``: the first
    operand a parameter sets (a list for ``len(x)``) is moved within the bounds the others
    give (an integer to the nearest, a float between two bounds to their middle)."""
    if not isinstance(test, ast.Compare):
        return False
    ops = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
    if not all(isinstance(o, ops) for o in test.ops):
        return False
    sides = [test.left, *test.comparators]
    for i, side in enumerate(sides):
        if _extreme_within(scene, side, _bounds(scene, sides, test.ops, i)):
            return True
        target = side.args[0] if _called(side, "len") and side.args else side  # type: ignore[attr-defined]
        current = scene.value(side)
        if not isinstance(current, (int, float)) or isinstance(current, bool):
            continue
        low, high = _bounds(scene, sides, test.ops, i)
        new = _within(current, low, high)
        if new is None or new == current:
            continue
        if target is not side:
            if not isinstance(new, int) or not 0 < new <= _MAX_ITEMS:
                continue
            if scene.set(target, _resized(scene.value(target), new)):
                return True
        elif scene.set(side, new):
            return True
    return False


def _extreme_within(scene: _Scene, side: ast.expr, bounds: tuple[Any, Any]) -> bool:
    """``max(p) < n``, ``min(p) >= 0``: every item of ``p`` moved within the bounds."""
    if not ((_called(side, "max") or _called(side, "min")) and len(side.args) == 1):  # type: ignore[attr-defined]
        return False
    node = side.args[0]  # type: ignore[attr-defined]
    items = scene.value(node)
    if not isinstance(items, (list, tuple)) or not all(_whole(v) for v in items):
        return False
    moved = [_within(v, *bounds) for v in items]
    if any(v is None for v in moved):
        return False
    return scene.set(node, type(items)(moved))


def one_of(scene: _Scene, test: ast.expr) -> bool:
    """``p in ('a', 'b')`` / ``p in TABLE``: the first choice that is plain data (a table's
    first key; a set's smallest)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not isinstance(test.ops[0], ast.In):
        return False
    choices = scene.value(test.comparators[0])
    if isinstance(choices, (set, frozenset)):
        choices = sorted(choices, key=repr)
    if not isinstance(choices, (Mapping, list, tuple)):
        return False
    for choice in choices:
        if isinstance(choice, (str, int, float)) and not isinstance(choice, bool):
            return scene.set(test.left, choice)
    return False


def keys_of(scene: _Scene, test: ast.expr) -> bool:
    """``set(p) == {'depths', 'widths'}``: a dict with those keys, the first value of a
    table (of the class or the module) that is such a dict, the one of smallest numbers."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not (isinstance(test.ops[0], ast.Eq) and _called(test.left, "set")):
        return False
    keys = scene.value(test.comparators[0])
    node = test.left.args[0] if test.left.args else None  # type: ignore[attr-defined]
    if not isinstance(keys, (set, frozenset)) or node is None:
        return False
    frame = scene.frames[-1]
    owner = frame.names.get("self")
    classes = type(owner).__mro__ if owner is not None else ()
    tables = [*(v for c in classes for v in vars(c).values()), *frame.scope.values()]
    entries = [
        dict(entry)
        for table in tables
        if isinstance(table, Mapping)
        for entry in table.values()
        if isinstance(entry, Mapping) and set(entry) == keys and _plain(dict(entry))
    ]
    return bool(entries) and scene.set(node, min(entries, key=_magnitude))


def equals(scene: _Scene, test: ast.expr) -> bool:
    """``p == c``: ``c``; ``p != c``: the size its name suggests, else ``c + 1``."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    op, node, other = test.ops[0], test.left, test.comparators[0]
    wanted = scene.value(other)
    if wanted is MISSING or isinstance(node, ast.Constant):
        return False
    if isinstance(op, ast.Eq):
        return scene.set(node, wanted)
    if isinstance(op, ast.NotEq) and _whole(wanted):
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        size = int_for(name, PROFILES[0])
        return scene.set(node, size if _whole(size) and size != wanted else wanted + 1)
    return False


def divisible(scene: _Scene, test: ast.expr) -> bool:
    """``a % b == 0``: ``a`` rounded up to a multiple of ``b``, else ``b`` made a divisor
    of ``a``."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, zero = test.left, scene.value(test.comparators[0])
    if not (isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) and zero == 0):
        return False
    a, b = scene.value(left.left), scene.value(left.right)
    if not (_whole(a) and _whole(b)) or b == 0:
        return False
    return scene.set(left.left, a + (-a) % b) or scene.set(left.right, math.gcd(a, b))


_RULES: tuple[Callable[[_Scene, ast.expr], bool], ...] = (
    instance_of,
    equal_lengths,
    ordered,
    one_of,
    keys_of,
    divisible,
    equals,
)


# --------------------------------------------------------------------------- values


def _bounds(
    scene: _Scene, sides: list[ast.expr], ops: list[ast.cmpop], i: int
) -> tuple[tuple[float, bool] | None, tuple[float, bool] | None]:
    """The (bound, strict) below and above operand ``i`` of a comparison chain."""
    low: tuple[float, bool] | None = None
    high: tuple[float, bool] | None = None
    for j in (i - 1, i + 1):  # the neighbours: ``a < p < b``
        if not 0 <= j < len(sides):
            continue
        value = scene.value(sides[j])
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        first, op = (j, ops[j]) if j < i else (i, ops[j - 1])
        strict = isinstance(op, (ast.Lt, ast.Gt))
        below = isinstance(op, (ast.Lt, ast.LtE)) == (first == j)  # ``value < p``: below p
        if below:
            low = (value, strict)
        else:
            high = (value, strict)
    return low, high


def _within(
    current: float, low: tuple[float, bool] | None, high: tuple[float, bool] | None
) -> float | None:
    """``current`` moved within the bounds: an integer to the nearest, a float between two
    bounds to their middle; ``None`` when no value fits."""
    if isinstance(current, int):
        least = None if low is None else math.floor(low[0]) + 1 if low[1] else math.ceil(low[0])
        most = None if high is None else math.ceil(high[0]) - 1 if high[1] else math.floor(high[0])
        if least is not None and most is not None and least > most:
            return None
        moved = max(current, least) if least is not None else current
        return min(moved, most) if most is not None else moved
    if low is not None and high is not None:
        return (low[0] + high[0]) / 2 if low[0] < high[0] else None
    if low is not None and (current < low[0] or (low[1] and current == low[0])):
        return low[0] + 1.0 if low[1] else low[0]
    if high is not None and (current > high[0] or (high[1] and current == high[0])):
        return high[0] - 1.0 if high[1] else high[0]
    return current


def _resized(value: object, count: int) -> object:
    """``value`` as a list (or tuple) of ``count`` items: cut, or its last item repeated."""
    if isinstance(value, (list, tuple)):
        if not value:
            return value
        items = [*value[:count], *[value[-1]] * (count - len(value))]
        return tuple(items) if isinstance(value, tuple) else items
    return MISSING if value is MISSING or value is None else [value] * count


def _magnitude(value: object) -> float:
    """The sum of the numbers in ``value`` (the smallest table entry is the smallest block)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return abs(value)
    if isinstance(value, Mapping):
        value = list(value.values())
    return sum(_magnitude(v) for v in value) if isinstance(value, (list, tuple)) else 0


def _length(value: object) -> int | None:
    return len(value) if isinstance(value, (list, tuple, dict, str)) else None


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _plain(value: object, known: list[object] = []) -> bool:  # noqa: B006 - read only
    """Data a recipe writes as JSON: numbers, strings, ``None``, values of the constructor
    call (``known``) and lists, tuples and string-keyed dicts of them."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if any(value is k for k in known):
        return True
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return all(_plain(v, known) for v in value)
    if isinstance(value, dict) and type(value) is dict:
        return all(isinstance(k, str) and _plain(v, known) for k, v in value.items())
    return False


def _called(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _pure(node: ast.AST) -> bool:
    """Only names, attributes, subscripts, literals, operators and pure builtin calls."""
    return all(
        not isinstance(n, (ast.Call, ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield))
        or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _PURE)
        for n in ast.walk(node)
    )


def _with_item(whole: object, path: tuple[str | int, ...], value: object) -> object:
    """``whole`` with the item at ``path`` set to ``value`` (the containers on the way
    copied); ``MISSING`` when the path is not in it."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(whole, (list, tuple)) and type(whole) in (list, tuple) and key == EVERY:
        items = [_with_item(item, rest, value) for item in whole]
        return MISSING if MISSING in items or not items else type(whole)(items)
    if isinstance(whole, (list, tuple)) and type(whole) in (list, tuple) and isinstance(key, int):
        if not -len(whole) <= key < len(whole):
            return MISSING
        items = list(whole)
        items[key] = _with_item(items[key], rest, value)
        return MISSING if items[key] is MISSING else type(whole)(items)
    if isinstance(whole, dict) and type(whole) is dict and key in whole:
        inner = _with_item(whole[key], rest, value)
        return MISSING if inner is MISSING else {**whole, key: inner}
    return MISSING


def _positional(cls: type) -> list[str]:
    """The names of ``cls``'s positional constructor parameters."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds]


def _applied(ctor: Ctor, cls: type, changes: Mapping[str, object]) -> Ctor:
    """``ctor`` with ``changes``: in place where given positionally, else as keywords."""
    positional = _positional(cls)[: len(ctor.args)]
    args = [changes.get(name, arg) for name, arg in zip(positional, ctor.args, strict=False)]
    args += list(ctor.args[len(args) :])
    kwargs = {k: v for k, v in changes.items() if k not in positional}
    kept = [p for p in ctor.placeholders if p not in changes]
    return Ctor(
        "synthesized", tuple(args), {**ctor.kwargs, **kwargs}, kept, ctor.profile, ctor.inputs
    )
