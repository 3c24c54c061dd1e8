"""Sandbox child: values for a parameter the constructor uses by its attributes
(``block.expansion`` then ``block(...)``, ``trunk.channel_list``, ``base.get_classifier()``):
a class of the block file that has them, else a shape-keeping stand-in that carries them."""

from __future__ import annotations

import ast
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin

from nnrag.validate.probe.profiles import MISSING
from nnrag.validate.probe.signatures import (
    is_abstract_module,
    is_name,
    parsed_source,
    required_count,
)
from nnrag.validate.probe.stand_ins import ShapeKeeping
from nnrag.validate.probe.usage import Access, Use
from nnrag.validate.probe.values import call, encode, remember, seed_cpu


class Maker(Protocol):
    """What the stand-ins need of the argument synthesizer (``probe.args.Synth``)."""

    def build(self, cls: type) -> object: ...
    def field(self, name: str) -> object: ...
    def structure(self, name: str, tree: Access) -> object: ...


_RATIOS = re.compile(r"ratio|expan|factor|mult|scale")
"""Class attributes of a factory that scale the widths it makes (``expansion``)."""


def wanted(use: Use) -> frozenset[str]:
    """The attributes a value for the parameter must have: those read, else (for a class)
    those the code looks for with ``hasattr`` (``hasattr(block, "expansion")``); not dunders
    (``block.__name__``: every class has one)."""
    reads = frozenset(a for a in use.reads if not a.startswith("__"))
    if reads:
        return reads
    return use.optional if as_class(use) else frozenset()


def as_class(use: Use) -> bool:
    """The constructor calls the parameter or checks it with ``issubclass``: a class."""
    return use.called or use.class_checked


def file_classes(module: Any) -> list[type]:
    """The classes the block file defines at module level that can be used (not abstract
    modules), modules first, fewest required constructor parameters first, bases before
    their subclasses, then by name."""
    if module is None:
        return []
    found = [
        value
        for value in list(vars(module).values())
        if isinstance(value, type)
        and value.__module__ == module.__name__
        and not (issubclass(value, nn.Module) and is_abstract_module(value))
    ]
    return sorted(
        found,
        key=lambda cls: (
            not issubclass(cls, nn.Module),
            required_count(cls),
            len(cls.__mro__),
            cls.__qualname__,
        ),
    )


def class_with_attributes(module: Any, use: Use, *, as_type: bool = False) -> type | None:
    """The block file's class that carries every wanted attribute (:func:`wanted`) on the
    class itself, to be passed as the class: for a parameter used as a class (called or
    ``issubclass``-checked) as class attributes or methods; for any other as plain class
    data (``block.expansion``: a block class passed as a factory); ``as_type``: annotated
    as a class. In the order of :func:`file_classes`; ``None`` if there is none."""
    names = wanted(use)
    if not names:
        return None
    classy = as_type or as_class(use)
    check = _on_class if classy else _is_class_data
    found = [
        cls
        for cls in file_classes(module)
        if (classy or issubclass(cls, nn.Module)) and all(check(cls, a) for a in names)
    ]
    return found[0] if found else None


def classes_setting(module: Any, reads: frozenset[str] | set[str]) -> list[type]:
    """The block file's module classes whose instances have every attribute in ``reads``:
    set on ``self`` by the class's code or by a base's of the block file (``self.d_model =
    ...``), or defined on such a class (class data, methods), fewest required constructor
    parameters first."""
    if module is None or not reads:
        return []
    assigned = _set_attributes(module)
    found = []
    for cls in file_classes(module):
        if not issubclass(cls, nn.Module):
            continue
        own = [k for k in cls.__mro__ if k.__module__ == module.__name__]
        have = {a for k in own for a in assigned.get(k.__name__, set())}
        if all(a in have or _on_class(cls, a) for a in reads):
            found.append(cls)
    return found


def stand_in_class(maker: Maker, name: str, use: Use) -> object:
    """A factory class for a parameter the constructor calls and reads attributes of that
    no class of the block file has: a :class:`ShapeKeeping` subclass (made by any call, it
    keeps its input's shape) with every wanted attribute as class data, by its name; a ratio
    (``expansion``) is 1, since the layer keeps widths. MISSING when it calls a method of
    the parameter (a stand-in has none) or reads nothing."""
    names = wanted(use)
    if not use.called or not names or use.methods & names:
        return MISSING
    values = {a: 1 if _RATIOS.search(a.lower()) else maker.field(a) for a in sorted(names)}
    if any(_RATIOS.search(a.lower()) for a in names):  # ``planes * block.expansion``
        made = attribute_class(_camel(name), values, widening=True)
        return remember(made, call(attribute_class, [_camel(name), values], {"widening": True}))
    made = attribute_class(_camel(name), values)
    return remember(made, call(attribute_class, [_camel(name), values]))


def stand_in_module(maker: Maker, use: Use, tree: Access) -> object:
    """A module for a parameter whose attributes the constructor reads but that no module
    of the block file has: a ``torch.nn`` layer that declares them all (:func:`torch_layers`,
    built with synthesized arguments), else a :class:`ShapeKeeping` layer with each
    attribute set by its name (or by what is read under it, ``tree``; not those other
    methods call), recorded as its call and the attributes set. MISSING when the
    constructor calls a method of it (a stand-in has none), reads nothing it lacks, or tells
    kinds of module apart with ``isinstance`` (a stand-in is none of them)."""
    everywhere = set(use.reads) | {key for kind, key in tree if kind == "attr"}
    built = torch_layer(maker, everywhere, tree)  # what the other methods read too, then less
    built = torch_layer(maker, use.reads, tree) if built is MISSING else built
    if built is not MISSING or use.instance_checked:  # a stand-in passes no isinstance test
        return built  # ``embed.num_embeddings, embed.padding_idx``: an ``nn.Embedding``
    plain = ShapeKeeping()
    missing = {a for a in use.reads - use.later if not hasattr(plain, a)}
    if not missing or any(not hasattr(plain, m) for m in use.methods):
        return MISSING
    values = {attr: _attribute(maker, attr, tree.get(("attr", attr)) or {}) for attr in missing}
    for attr, value in values.items():
        setattr(plain, attr, value)
    return remember(plain, {**call(ShapeKeeping), "__set__": _encoded(values)})


def _attribute(maker: Maker, attr: str, tree: Access) -> object:
    """A stand-in's attribute: a ``torch.nn`` layer when what is read under it is what one
    declares (``m.w3.weight``, ``m.w3.bias``: a ``Linear``), else a structure of what is
    read under it, else a field by its name."""
    if tree and all(kind == "attr" and not sub for (kind, _), sub in tree.items()):
        built = torch_layer(maker, {key for _, key in tree})
        if built is not MISSING:
            return built
    return maker.structure(attr, tree) if tree else maker.field(attr)


def module_with_attributes(
    maker: Maker, module: Any, reads: frozenset[str] | set[str], *, exclude: Any = None
) -> object:
    """A module of the block file, built with synthesized arguments, that has every
    attribute in ``reads`` (:func:`classes_setting`), not an ``exclude`` class (nor a
    subclass of it); MISSING if none builds."""
    found = classes_setting(module, reads)
    if isinstance(exclude, type):
        found = [c for c in found if not issubclass(c, exclude)]
    for candidate in found[:3]:
        built = maker.build(candidate)
        if built is not MISSING and all(hasattr(built, attr) for attr in reads):
            return built
    return MISSING


def torch_layer(
    maker: Maker, reads: frozenset[str] | set[str], tree: Access | None = None
) -> object:
    """The first of :func:`torch_layers` that builds with synthesized arguments into a
    single layer (no child modules: not a whole ``nn.Transformer`` for a ``d_model``) that
    has every attribute in ``reads``, indexable where the code indexes it (``tree``:
    ``layer.kernel_size[0]`` wants a pair, not an ``nn.Unfold``'s int); MISSING if none does."""
    indexed = {
        a for a in reads if any(kind == "item" for kind, _ in (tree or {}).get(("attr", a), {}))
    }
    for layer in torch_layers(reads)[: 8 if indexed else 4]:
        built = maker.build(layer)
        if (
            isinstance(built, nn.Module)
            and not list(built.children())
            and all(hasattr(built, a) for a in reads)
            and all(hasattr(getattr(built, a), "__getitem__") for a in indexed)
        ):
            return built
    return MISSING


def torch_layers(reads: frozenset[str] | set[str]) -> list[type]:
    """The ``torch.nn`` module classes that declare every attribute in ``reads`` (as
    annotations or constants of their torch classes: ``weight: Tensor``,
    ``__constants__ = ["num_embeddings", ...]``), those declaring fewest first (the closest
    fit), then by fewest required constructor parameters and by name."""
    if not reads:
        return []
    found = [
        value
        for value in vars(nn).values()
        if isinstance(value, type)
        and issubclass(value, nn.Module)
        and set(reads) <= _declared(value)
        and not issubclass(value, LazyModuleMixin)  # its weights have no values yet
        and not is_abstract_module(value)
    ]
    return sorted(found, key=lambda cls: (len(_declared(cls)), required_count(cls), cls.__name__))


def _declared(cls: type) -> set[str]:
    """What ``cls``'s ``torch.nn`` classes (not ``nn.Module`` itself) declare: annotations,
    constants and the attributes their ``__init__`` sets on ``self``."""
    found: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("torch.nn") or klass is nn.Module:
            continue
        found.update(vars(klass).get("__annotations__", {}), vars(klass).get("__constants__", ()))
        init = vars(klass).get("__init__")
        tree = parsed_source(init) if init is not None else None
        found.update(
            target.attr
            for node in (ast.walk(tree) if tree is not None else ())
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Attribute) and is_name(target.value, "self")
        )
    return found


def attribute_class(name: str, attributes: dict[str, object], *, widening: bool = False) -> type:
    """A :class:`ShapeKeeping` subclass named ``name`` with ``attributes`` as class data
    (``widening``: a :class:`Widening` one)."""
    base = Widening if widening else ShapeKeeping
    return type(name, (base,), {**attributes, "__module__": __name__})


class Widening(ShapeKeeping):
    """A stand-in for a factory whose width the code scales by a ratio it reads from it
    (``block(inplanes, planes)``, then ``planes * block.expansion`` wide, the ratio 1):
    built with two leading ints, its layer maps an input as wide as the first to the second
    (a 1x1 convolution over an image's channels, a linear layer over the last dimension);
    otherwise it keeps the shape, as :class:`ShapeKeeping`."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__()
        del kwargs
        pair = args[:2]
        self.widths = (
            (int(pair[0]), int(pair[1]))  # type: ignore[call-overload]  # checked: two ints
            if len(pair) == 2 and all(type(a) is int and a > 0 for a in pair)
            else None
        )

    def forward(self, x: torch.Tensor, *rest: object, **options: object) -> torch.Tensor:
        if self.layer is None and self.widths is not None and isinstance(x, torch.Tensor):
            wide, out = self.widths
            image = x.dim() == 4 and x.shape[1] == wide
            if x.is_floating_point() and (image or (x.dim() >= 2 and x.shape[-1] == wide)):
                state = torch.get_rng_state()
                try:
                    seed_cpu(0)
                    layer = nn.Conv2d(wide, out, 1) if image else nn.Linear(wide, out)
                finally:
                    torch.set_rng_state(state)
                self.layer = layer.to(device=x.device, dtype=x.dtype)
        return super().forward(x, *rest, **options)


def class_annotation(annotation: Any) -> str | None:
    """``"class"`` for ``type``, ``type[nn.Module]`` or ``Type[Any]``, ``"callable"`` for a
    ``Callable`` (optional or not): annotations that name no class of their own; else
    ``None``."""
    options = (
        [a for a in typing.get_args(annotation) if a is not type(None)]
        if typing.get_origin(annotation) is typing.Union or type(annotation).__name__ == "UnionType"
        else [annotation]
    )
    if len(options) != 1:
        return None
    one = options[0]
    origin = typing.get_origin(one)
    if one is Callable or getattr(origin, "__name__", "") == "Callable":
        return "callable"
    inner = typing.get_args(one) if origin is type else ()
    if one is type or (origin is type and inner and inner[0] in (nn.Module, Any)):
        return "class"
    return None


def _on_class(cls: type, attr: str) -> bool:
    """``cls`` or a base of its own code (not torch's, not ``object``) defines ``attr``."""
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in {"torch", "builtins"}:
            continue
        if attr in vars(klass):
            return True
    return False


def _is_class_data(cls: type, attr: str) -> bool:
    value = inspect.getattr_static(cls, attr, None)
    return value is not None and isinstance(value, (int, float, str, bool, tuple))


_SET_CACHE: dict[int, dict[str, set[str]]] = {}


def _set_attributes(module: Any) -> dict[str, set[str]]:
    """``self.X`` attributes assigned in each top-level class of ``module`` (one parse)."""
    key = id(module)
    if key not in _SET_CACHE:
        tree = parsed_source(module)
        found: dict[str, set[str]] = {}
        for node in tree.body if isinstance(tree, ast.Module) else ():
            if isinstance(node, ast.ClassDef):
                found[node.name] = {
                    target.attr
                    for sub in ast.walk(node)
                    if isinstance(sub, (ast.Assign, ast.AnnAssign))
                    for target in (sub.targets if isinstance(sub, ast.Assign) else [sub.target])
                    if isinstance(target, ast.Attribute) and is_name(target.value, "self")
                }
        _SET_CACHE.clear()  # one block per child: keep only the latest module
        _SET_CACHE[key] = found
    return _SET_CACHE[key]


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "Part"


def _encoded(values: dict[str, object]) -> dict[str, object]:
    return {k: encode(v) for k, v in values.items()}
