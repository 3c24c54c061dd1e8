"""Sandbox child: what a class's signature and source say about its constructor parameters."""

from __future__ import annotations

import ast
import contextlib
import enum
import inspect
import re
import sys
import textwrap
import typing
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from nnrag.validate.probe.annotations import nothing_to_configure


def type_hints(init: inspect.Signature | None, owner: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(owner)
    except Exception:
        pass
    out: dict[str, Any] = {}
    if init is None:
        return out
    namespace = vars(sys.modules.get(getattr(owner, "__module__", ""), sys))
    for name, param in init.parameters.items():
        annotation = param.annotation
        if isinstance(annotation, str):
            try:
                annotation = eval(
                    annotation, dict(namespace)
                )  # annotations are the file's own code
            except Exception:
                continue
        if annotation is not inspect.Parameter.empty:
            out[name] = annotation
    return out


def globals_of(func: Any) -> Mapping[str, Any]:
    """The module namespace ``func``'s annotations and names refer to: its own, through any
    ``functools.wraps`` wrapper (the harvest's recording ``forward`` is one)."""
    with contextlib.suppress(ValueError):  # a wrapper chain that loops: the outer one
        func = inspect.unwrap(func)
    return getattr(func, "__globals__", {})


def signature_of(func: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def init_signature(cls: Any) -> tuple[inspect.Signature | None, Any]:
    """The constructor signature, from the first base whose ``__init__`` names its parameters.

    ``class Quantizable(Base): def __init__(self, *args, **kwargs)`` forwards everything to
    ``Base.__init__``, so ``Base``'s parameters are the ones to synthesize.
    """
    sig = signature_of(cls)
    owner = getattr(cls, "__init__", cls)
    if sig is None or not _only_var(sig) or not isinstance(cls, type):
        return sig, owner
    for base in cls.__mro__[1:]:
        init = base.__dict__.get("__init__")
        if init is None or base in (nn.Module, object):
            continue
        base_sig = signature_of(init)
        if base_sig is None:
            continue
        params = list(base_sig.parameters.values())[1:]
        if params and not _only_var(base_sig.replace(parameters=params)):
            return base_sig.replace(parameters=params), init
    return sig, owner


def _only_var(sig: inspect.Signature) -> bool:
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return all(p.kind in kinds for p in sig.parameters.values())


def value_choices(cls: Any) -> dict[str, object]:
    """The value a parameter must take, from the class source: the first string it is compared
    with (``mode in ('cat', ...)``), or the smallest integer key of the table it is checked
    against (``depth in self.arch_settings``, ``if depth not in ARCHS: raise``)."""
    out: dict[str, object] = {}
    for klass in getattr(cls, "__mro__", ())[:4]:
        if klass.__module__.split(".")[0] in {"torch", "builtins"}:
            break
        names = vars(sys.modules[klass.__module__]) if klass.__module__ in sys.modules else {}
        tree = parsed_source(klass)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            left = node.left
            name = (
                left.id
                if isinstance(left, ast.Name)
                else left.attr
                if isinstance(left, ast.Attribute)
                else None
            )
            if name is None:
                continue
            for op, right in zip(node.ops, node.comparators, strict=False):
                if isinstance(op, (ast.In, ast.NotIn)):
                    keys = _int_keys(_table(right, cls, names))
                    if keys:
                        out.setdefault(name, min(keys))
                        continue
                if not isinstance(op, (ast.Eq, ast.In)):
                    continue
                items = right.elts if isinstance(right, (ast.List, ast.Tuple, ast.Set)) else [right]
                values = [  # a module constant (mode in {BINARY_MODE, ...}) reads as its value
                    i.value if isinstance(i, ast.Constant) else names.get(getattr(i, "id", ""))
                    for i in items
                ]
                strings = [v for v in values if isinstance(v, str)]
                if strings and strings[0]:
                    out.setdefault(name, strings[0])
    return out


def _table(node: ast.expr, cls: Any, names: Mapping[str, Any]) -> object:
    """The value of ``self.table`` / ``cls.table`` / a module-level ``TABLE`` / a literal."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return getattr(cls, node.attr, None) if node.value.id in {"self", "cls"} else None
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        try:
            return ast.literal_eval(node)
        except ValueError:
            return None
    return None


def _int_keys(table: object) -> list[int]:
    if not isinstance(table, (Mapping, list, tuple, set, frozenset)):
        return []
    keys = list(table)
    if keys and all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
        return keys
    return []


_PARSED: dict[int, tuple[Any, ast.AST | None]] = {}


def parsed_source(obj: Any) -> ast.AST | None:
    """The parsed source of ``obj`` (parsed once: a child probes one block, whose classes
    are asked about for every parameter and candidate)."""
    known = _PARSED.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1]
    tree: ast.AST | None = _class_node(obj) if inspect.isclass(obj) else None
    if tree is None:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
        except (OSError, TypeError, SyntaxError):
            tree = None
    _PARSED[id(obj)] = (obj, tree)
    return tree


_MODULE_TREES: dict[str, tuple[Any, ast.Module | None]] = {}


def _class_node(cls: type) -> ast.ClassDef | None:
    """The class statement of ``cls`` from its module's tree, parsed once per module
    (``inspect.getsource`` of a class parses the whole module on every call: seconds for a
    block file of a large library); ``None`` where it is not a module-level class."""
    module = sys.modules.get(cls.__module__)
    if module is None or "." in cls.__qualname__:
        return None
    known = _MODULE_TREES.get(cls.__module__)
    if known is None or known[0] is not module:
        try:
            known = (module, ast.parse(inspect.getsource(module)))
        except (OSError, TypeError, SyntaxError):
            known = (module, None)
        _MODULE_TREES[cls.__module__] = known
    tree = known[1]
    found = (
        None
        if tree is None
        else [
            node
            for node in tree.body
            if isinstance(node, ast.ClassDef) and node.name == cls.__name__
        ]
    )
    return found[-1] if found else None  # the last definition is the one the name holds


def is_name(node: ast.AST, name: str, kind: type[ast.AST] | None = None) -> bool:
    """``node`` is the name ``name`` (or, with ``kind=ast.Attribute``, an attribute of it)."""
    if kind is ast.Attribute:
        return isinstance(node, ast.Attribute) and is_name(node.value, name)
    return isinstance(node, ast.Name) and node.id == name


def config_class_for(
    module: Any, reads: set[str], *, share: float = 0.5, named: re.Pattern[str] | None = None
) -> type | None:
    """The block file's class whose default instance has most of the attributes ``reads``
    as data (at least ``share`` of them, and one; methods do not count): a config class
    built from its defaults, by what is read; ``named``: only classes whose name it
    matches."""
    if module is None:
        return None
    best: tuple[int, str, type] | None = None
    for value in list(vars(module).values()):
        if (
            not isinstance(value, type)
            or (named is not None and not named.search(value.__name__))
            or issubclass(value, (nn.Module, torch.Tensor, BaseException, enum.Enum))
            or value.__module__ != module.__name__
            or required_count(value) > 0
        ):
            continue
        try:
            instance = value()
            names = {  # the fields it sets, not its methods (``cfg.get``)
                n for n in set(dir(instance)) & reads if not callable(getattr(instance, n, None))
            }
        except Exception:
            continue
        score = len(reads & names)
        if (
            score
            and score >= share * len(reads)
            and (best is None or (score, value.__name__) > best[:2])
        ):
            best = (score, value.__name__, value)
    return None if best is None else best[2]


def is_abstract_module(cls: type) -> bool:
    """A module class that cannot run: abstract methods, no ``forward`` of its own, or a
    ``forward`` that only raises ``NotImplementedError`` or has no body but its docstring
    (a base such as a message-passing layer's)."""
    if inspect.isabstract(cls):
        return True
    forward = getattr(cls, "forward", None)
    if forward is None or forward is nn.Module.forward:
        return True
    tree = parsed_source(forward)
    if not isinstance(tree, ast.Module):
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = [
        n
        for n in node.body
        if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        and not isinstance(n, ast.Pass)
    ]
    return not body or (
        len(body) == 1
        and isinstance(body[0], ast.Raise)
        and "NotImplementedError" in ast.unparse(body[0])
    )


def concrete_modules(cls: type, module: Any) -> list[type]:
    """``cls`` if it can run, else its subclasses from the block file (or from ``cls``'s own
    package), fewest required constructor parameters first, then by name."""
    if not is_abstract_module(cls):
        return [cls]
    home = getattr(module, "__name__", None)
    package = cls.__module__.split(".")[0]
    seen: list[type] = []
    pending: list[type] = list(cls.__subclasses__())
    while pending:
        sub = pending.pop(0)
        if sub in seen:
            continue
        seen.append(sub)
        pending.extend(sub.__subclasses__())
    usable = [
        sub
        for sub in seen
        if (sub.__module__ == home or sub.__module__.split(".")[0] == package)
        and not is_abstract_module(sub)
    ]
    return sorted(usable, key=lambda sub: (required_count(sub), sub.__qualname__))


def required_count(cls: type) -> int:
    sig, _ = init_signature(cls)
    if sig is None:
        return 0
    return sum(
        p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in sig.parameters.values()
    )


_STAGE_NAMES = re.compile(
    r"(depths?|layers|blocks|dims|channels|chs|widths|heads|ratios|sizes|strides|repeats)$"
)


def stage_lengths(sig: inspect.Signature, kwargs: Mapping[str, object]) -> dict[str, object]:
    """Synthesized per-stage sequences take the length of the defaulted per-stage ones.

    ``ResNet(layers, channels=(64, 128, 256, 512))`` builds one stage per item of ``layers``
    and reads four of them, so ``layers`` gets four items, not two.
    """
    lengths = [
        len(p.default)
        for n, p in sig.parameters.items()
        if isinstance(p.default, (tuple, list))
        and 2 < len(p.default) <= 6
        and _STAGE_NAMES.search(n.lower())
        and all(isinstance(v, int) and not isinstance(v, bool) for v in p.default)
    ]
    if not lengths:
        return {}
    want = max(set(lengths), key=lengths.count)
    out: dict[str, object] = {}
    for name, value in kwargs.items():
        if isinstance(value, (tuple, list)) and len(value) == 2 and _STAGE_NAMES.search(name):
            items = [*value, *[value[-1]] * (want - 2)]
            out[name] = tuple(items) if isinstance(value, tuple) else items
    return out


_DEPTH_NAMES = re.compile(r"^(depths?|num_layers|n_layers|layers|num_blocks|n_blocks|\w+_depths?)$")


def shallow_defaults(cls: Any) -> dict[str, object]:
    """Defaulted depth-like arguments cut to one layer per stage (same widths, much faster)."""
    sig = signature_of(cls)
    out: dict[str, object] = {}
    for name, param in sig.parameters.items() if sig else ():
        default = param.default
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            continue
        if not _DEPTH_NAMES.match(name.lower()):
            continue
        if isinstance(default, int) and not isinstance(default, bool) and default > 2:
            out[name] = 1
        elif (
            isinstance(default, tuple)
            and default
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in default)
            and any(v > 1 for v in default)
        ):
            out[name] = tuple(1 for _ in default)
    return out


CONFIG_CLASSES = re.compile(r"(Config|Cfg|Args|Params)$")


def find_config_class(module: Any) -> type | None:
    """The block file's first class named like a config (:data:`CONFIG_CLASSES`) that has
    something to configure (not a stand-in the file only tests against)."""
    if module is None:
        return None
    for name, value in vars(module).items():
        if (
            isinstance(value, type)
            and value.__module__ == module.__name__
            and CONFIG_CLASSES.search(name)
            and not nothing_to_configure(value)
        ):
            return value
    return None


def named_class(module: Any, name: str) -> type | None:
    """The class of ``module`` named ``name`` in CamelCase (``flow_head`` -> ``FlowHead``)."""
    if module is None:
        return None
    camel = "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)
    found = vars(module).get(camel)
    if isinstance(found, type) and found.__module__ == module.__name__:
        return found
    return None
