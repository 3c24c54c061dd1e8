"""Sandbox child: real small layers for placeholder modules, and plain ones for factories."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin

from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.profiles import PROFILES
from nnrag.validate.probe.signatures import signature_of
from nnrag.validate.probe.values import call, decode, encode, remember, seed_cpu


def real_stand_ins(ctor: Ctor, run: Callable[[], object]) -> Ctor | None:
    """``ctor`` with each placeholder module (an ``nn.Identity`` given for a module argument
    such as ``fn``, ``main`` or ``backbone``, alone, in a list or in a ``ModuleList`` or
    ``Sequential``) replaced by a real layer that keeps the shape it saw when ``run`` ran
    forward: a 1x1 convolution over the channels of an image, a linear layer over the last
    dimension of anything else; a placeholder class (the ``nn.Identity`` class given for a
    factory) by :class:`ShapeKeeping`, which makes such a layer at its first call.

    ``None`` when a placeholder is none of these, or an instance saw anything but one float
    tensor of one shape (one not called at all becomes a :class:`ShapeKeeping` instance).
    """
    holders = {name: ctor.kwargs.get(name) for name in ctor.placeholders}
    parts = {name: _identities(value) for name, value in holders.items()}
    if not holders or any(found is None for found in parts.values()):
        return None
    seen: dict[int, set[tuple[int, ...]]] = {
        id(m): set() for found in parts.values() for m in found or ()
    }
    handles = [
        module.register_forward_pre_hook(_recorder(seen[id(module)]))
        for found in parts.values()
        for module in found or ()
    ]
    try:
        run()
    except Exception:
        return None
    finally:
        for handle in handles:
            handle.remove()
    made: dict[str, object] = {}
    for name, value in holders.items():
        layers = []
        for module in parts[name] or ():
            shapes = seen[id(module)]
            layer = shape_keeping_layer(next(iter(shapes))) if len(shapes) == 1 else None
            if not shapes:  # not called on this run (a random choice): made at its first call
                layer = remember(ShapeKeeping(), call(ShapeKeeping))
            if layer is None:
                return None
            layers.append(layer)
        made[name] = _rebuilt(value, layers)
    return Ctor(ctor.origin, ctor.args, {**ctor.kwargs, **made}, [], ctor.profile, ctor.inputs)


def _identities(value: object) -> list[nn.Module] | None:
    """The placeholder instances in ``value`` (none for placeholder classes), ``None`` when
    ``value`` is not a placeholder, a placeholder class or a container of placeholders."""
    if value is nn.Identity or (
        isinstance(value, (list, tuple)) and value and all(v is nn.Identity for v in value)
    ):
        return []
    if type(value) is nn.Identity:
        return [value]
    items = list(value) if isinstance(value, (list, tuple, nn.ModuleList, nn.Sequential)) else []
    if items and all(type(item) is nn.Identity for item in items):
        return items
    return None


def _rebuilt(value: object, layers: list[nn.Module]) -> object:
    """``value`` with its placeholders replaced by ``layers`` (placeholder classes by
    :class:`ShapeKeeping`), recorded as the calls that make it."""
    if value is nn.Identity:
        return ShapeKeeping
    if isinstance(value, (list, tuple)) and all(v is nn.Identity for v in value):
        return type(value)(ShapeKeeping for _ in value)
    if type(value) is nn.Identity:
        return layers[0]
    if isinstance(value, nn.Sequential):
        return remember(nn.Sequential(*layers), call(nn.Sequential, tuple(layers)))
    if isinstance(value, nn.ModuleList):
        return remember(nn.ModuleList(layers), call(nn.ModuleList, [layers]))
    return type(value)(layers)  # type: ignore[call-arg]  # a list or a tuple


class ShapeKeeping(nn.Module):
    """A real layer for a factory argument: built by any call (its arguments ignored), it
    makes at its first forward a layer that keeps the shape of its input (as
    :func:`shape_keeping_layer`, seeded, the global generator left as it was)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        del args, kwargs
        super().__init__()
        self.layer: nn.Module | None = None

    def forward(self, x: torch.Tensor, *rest: object, **options: object) -> torch.Tensor:
        del rest, options  # what else a module argument is called with (an edge index)
        if self.layer is None:
            if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
                raise TypeError(f"a shape-keeping stand-in takes one float tensor, got {x!r}")
            state = torch.get_rng_state()
            try:
                layer = shape_keeping_layer(tuple(x.shape))
            finally:
                torch.set_rng_state(state)
            if layer is None:
                raise ValueError(f"no shape-keeping layer for an input of shape {tuple(x.shape)}")
            self.layer = layer.to(device=x.device, dtype=x.dtype)
        return self.layer(x)  # type: ignore[no-any-return]  # torch is untyped for mypy: a module call is Any


def profile_layers(ctor: Ctor) -> Ctor | None:
    """``ctor`` with each placeholder module replaced by a 1x1 convolution over the size
    profile's width: for a constructor that needs the placeholder's parameters
    (``next(model.parameters())``), or one forward never reached directly (the block keeps
    a copy). ``None`` when a placeholder is not an ``nn.Identity`` instance."""
    holders = {name: ctor.kwargs.get(name) for name in ctor.placeholders}
    if not holders or not all(type(v) is nn.Identity for v in holders.values()):
        return None
    width = (ctor.profile or PROFILES[0]).dim
    made = {name: shape_keeping_layer((2, width, 1, 1)) for name in holders}
    return Ctor(ctor.origin, ctor.args, {**ctor.kwargs, **made}, [], ctor.profile, ctor.inputs)


def _recorder(shapes: set[tuple[int, ...]]) -> Callable[[nn.Module, tuple[Any, ...]], None]:
    def record(module: nn.Module, args: tuple[Any, ...]) -> None:
        del module
        one = len(args) == 1 and isinstance(args[0], torch.Tensor)
        if one and args[0].is_floating_point() and args[0].dim() >= 2:
            shapes.add(tuple(args[0].shape))
        else:
            shapes.add(())  # anything else: more than one kind seen, no stand-in

    return record


def shape_keeping_layer(shape: tuple[int, ...]) -> nn.Module | None:
    """A small real layer whose output has ``shape`` for an input of ``shape`` (recorded
    as its constructor call, seeded, so a recipe rebuilds the same weights)."""
    if len(shape) < 2 or min(shape) < 1:
        return None
    seed_cpu(0)
    if len(shape) == 4:  # (B, C, H, W)
        channels = shape[1]
        conv = nn.Conv2d(channels, channels, 1)
        return remember(conv, call(nn.Conv2d, [channels, channels, 1], seed=0))
    width = shape[-1]
    return remember(nn.Linear(width, width), call(nn.Linear, [width, width], seed=0))


_BRANCH_SIZES = re.compile(r"Sizes of tensors must match except in dimension 1")
"""``torch.cat`` of branches whose spatial sizes differ."""


def plain_convolutions(ctor: Ctor, cls: type, messages: list[str]) -> Ctor | None:
    """Repair: branches concatenated with different spatial sizes (a stride-2 convolution
    padded by its factory beside an unpadded pooling) try the constructor's convolution
    factories as ``torch.nn.Conv2d``, which pads only what it is asked to.

    The factories: parameters named ``*conv*`` that are not given and default to ``None`` or
    to a module class other than ``nn.Conv2d``.
    """
    if ctor.origin != "synthesized" or not any(_BRANCH_SIZES.search(m) for m in messages):
        return None
    sig = signature_of(cls)
    swaps: dict[str, object] = {
        name: nn.Conv2d
        for name, param in (sig.parameters.items() if sig else ())
        if "conv" in name.lower()
        and name not in ctor.kwargs
        and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
        and (
            param.default is None
            or (
                isinstance(param.default, type)
                and issubclass(param.default, nn.Module)
                and param.default is not nn.Conv2d
            )
        )
    }
    return ctor.with_kwargs(swaps) if swaps else None


_NORM_OVER_CHANNELS = re.compile(
    r"normalized_shape=\[(\d+)\], expected input with shape \[\*, \1\],"
    r" but got input of size\[\d+, \1, \d+, \d+\]"
)
"""A layer norm over the last dimension met an image whose channels come first."""


def batch_norms(ctor: Ctor, cls: type, messages: list[str]) -> Ctor | None:
    """Repair: a layer norm met channels-first images (``(B, C, H, W)`` where it normalizes
    the last dimension): the constructor's norm factories as ``torch.nn.BatchNorm2d``.

    The factories: parameters named ``*norm*`` that are not given (defaulting to ``None`` or
    a module class) or were given ``nn.LayerNorm``; with none, ``norm_layer`` when the
    constructor passes ``**kwargs`` on.
    """
    if ctor.origin != "synthesized" or not any(_NORM_OVER_CHANNELS.search(m) for m in messages):
        return None
    sig = signature_of(cls)
    params = sig.parameters if sig else {}
    swaps: dict[str, object] = {}
    for name, param in params.items():
        if "norm" not in name.lower() or param.kind not in (
            param.POSITIONAL_OR_KEYWORD,
            param.KEYWORD_ONLY,
        ):
            continue
        given = ctor.kwargs.get(name, param.default)
        if given is nn.LayerNorm or (
            name not in ctor.kwargs
            and (given is None or (isinstance(given, type) and issubclass(given, nn.Module)))
            and given is not nn.BatchNorm2d
        ):
            swaps[name] = nn.BatchNorm2d
    passes_on = any(p.kind == p.VAR_KEYWORD for p in params.values())
    if not swaps and passes_on and "norm_layer" not in ctor.kwargs:
        swaps["norm_layer"] = nn.BatchNorm2d
    return ctor.with_kwargs(swaps) if swaps else None


_VIEW = re.compile(r"shape '\[[-\d, ]+\]' is invalid for input of size \d+")
_HEADS = re.compile(r"(^|_)(num_|n_)?heads?$|nhead")
_WIDTHS = re.compile(r"chs$|channels$|dim$|dim_out$|embed_dim$|width$|features$")


def heads_divide_widths(ctor: Ctor, cls: type, messages: list[str]) -> Ctor | None:
    """Repair: a view failed while the synthesized widths do not divide by the head count the
    constructor defaults to (``num_heads=3`` beside ``out_chs=16``): every such width times
    the head count."""
    if ctor.origin != "synthesized" or not any(_VIEW.search(m) for m in messages):
        return None
    sig = signature_of(cls)
    params = sig.parameters if sig else {}
    heads = [
        p.default
        for name, p in params.items()
        if _HEADS.search(name.lower())
        and name not in ctor.kwargs
        and isinstance(p.default, int)
        and not isinstance(p.default, bool)
        and p.default > 1
    ]
    if len(heads) != 1:
        return None
    count = heads[0]
    scaled = {
        name: value * count
        for name, value in ctor.kwargs.items()
        if _WIDTHS.search(name.lower())
        and isinstance(value, int)
        and not isinstance(value, bool)
        and value % count
    }
    return ctor.with_kwargs(scaled) if scaled else None


_VIEW_PAIR = re.compile(r"shape '\[-1, (\d+), (\d+)\]' is invalid for input of size (\d+)")
"""A flat output viewed as ``(-1, a, b)``: a weight matrix per row (an edge network's)."""


def viewed_linear(ctor: Ctor, messages: list[str]) -> Ctor | None:
    """Repair: a linear layer given as an argument whose output forward views as
    ``(-1, a, b)`` (an edge network that makes one ``a x b`` matrix per edge) gets ``a * b``
    outputs; the layer given is lazy (``nn.LazyLinear``), so it keeps taking any input width.
    """
    if ctor.origin != "synthesized":
        return None
    for message in messages:
        m = _VIEW_PAIR.search(message)
        if m is None:
            continue
        rows, cols, size = (int(g) for g in m.groups())
        swaps = {
            name: remember(nn.LazyLinear(rows * cols), call(nn.LazyLinear, [rows * cols]))
            for name, value in ctor.kwargs.items()
            if isinstance(value, nn.Linear)
            and value.out_features not in (0, rows * cols)
            and size % value.out_features == 0
        }
        if swaps:
            return ctor.with_kwargs(swaps)
    return None


def fresh_lazy(ctor: Ctor) -> Ctor | None:
    """``ctor`` with every lazy layer it was given (``nn.LazyLinear``) that a forward has
    since sized made anew from its recorded call, so the next input sizes it again; ``None``
    when there is none."""
    fresh: dict[str, object] = {}
    for name, value in ctor.kwargs.items():
        if not isinstance(value, nn.Module) or isinstance(value, LazyModuleMixin):
            continue
        made = encode(value)
        target = made.get("__call__") if isinstance(made, dict) else None
        owner = decode(target) if isinstance(target, dict) else None
        if isinstance(owner, type) and issubclass(owner, LazyModuleMixin):
            fresh[name] = decode(made)
    return ctor.with_kwargs(fresh) if fresh else None


def fill_none_modules(ctor: Ctor, cls: type, messages: list[str]) -> Ctor | None:
    """Repair: forward called a module argument left at its ``None`` default (``'NoneType'
    object is not callable``): every such argument annotated as a module gets a placeholder
    layer (which a passing forward makes real, :func:`real_stand_ins`)."""
    if ctor.origin != "synthesized" or not any(
        "'NoneType' object is not callable" in m for m in messages
    ):
        return None
    sig = signature_of(cls)
    params = sig.parameters if sig else {}
    filled = {
        name: remember(nn.Identity(), call(nn.Identity))
        for name, param in params.items()
        if param.default is None
        and name not in ctor.kwargs
        and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
        and re.search(r"\bModule\b", str(param.annotation))
    }
    if not filled:
        return None
    return ctor.with_placeholders(filled)


_MORE_ARGUMENTS = re.compile(r"Identity\.forward\(\) (takes 2 positional arguments but|got an)")


def many_argument_stand_ins(ctor: Ctor, messages: list[str]) -> Ctor | None:
    """Repair: a placeholder layer was called with more than its input (``encoder(x,
    edge_index)``): each placeholder instance becomes a :class:`ShapeKeeping` layer, which
    keeps the shape of its first argument and takes the others, and each placeholder class
    (``block(in_channels, out_channels)`` then ``tree(x, residual)``) the class itself."""
    if ctor.origin != "synthesized" or not any(_MORE_ARGUMENTS.search(m) for m in messages):
        return None
    swaps: dict[str, object] = {
        name: remember(ShapeKeeping(), call(ShapeKeeping))
        for name in ctor.placeholders
        if type(ctor.kwargs.get(name)) is nn.Identity
    }
    swaps.update(  # a placeholder class (a factory): its layers keep their first argument's shape
        {name: ShapeKeeping for name in ctor.placeholders if ctor.kwargs.get(name) is nn.Identity}
    )
    if not swaps:
        return None
    rest = [name for name in ctor.placeholders if name not in swaps]
    return Ctor(ctor.origin, ctor.args, {**ctor.kwargs, **swaps}, rest, ctor.profile, ctor.inputs)
