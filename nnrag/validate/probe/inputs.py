"""Sandbox child: forward inputs (first layers, names) and shape repair."""

from __future__ import annotations

import inspect
import math
import re
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

import pluggy
import torch
from torch import nn

from nnrag.plugins import builtin_child_manager
from nnrag.validate.probe.docshapes import (
    documented_inputs,
    documented_types,
    first_documented,
    split_top,
)
from nnrag.validate.probe.graph import build_graph
from nnrag.validate.probe.layers import first_layer
from nnrag.validate.probe.levels import ctor_defaults, level_inputs
from nnrag.validate.probe.meets import first_met_elsewhere, met_inputs
from nnrag.validate.probe.profiles import MISSING, Profile, float_for, int_for
from nnrag.validate.probe.reshape import repair  # noqa: F401  # re-exported: older callers import it here
from nnrag.validate.probe.signatures import globals_of, signature_of
from nnrag.validate.probe.structured import dict_keys
from nnrag.validate.probe.values import decode, seed_cpu, tensor_spec

_INDEX_NAMES = re.compile(r"^(input_ids|ids|token_ids|indices|idx|labels?|targets?|word_ids)$")


# --------------------------------------------------------------------------- inputs


def model_side(module: nn.Module) -> int | None:
    """The square input side a model declares (``img_size``, ``pretrained_cfg``), if any."""
    for layer in module.modules():
        for name in ("img_size", "image_size", "input_size", "resolution"):
            value = getattr(layer, name, None)
            if isinstance(value, (tuple, list)) and value and isinstance(value[-1], int):
                value = value[-1]
            if isinstance(value, int) and not isinstance(value, bool) and 4 <= value <= 512:
                return value
        cfg = getattr(layer, "pretrained_cfg", None) or getattr(layer, "default_cfg", None)
        if isinstance(cfg, Mapping):
            size = cfg.get("input_size")
            if isinstance(size, (tuple, list)) and len(size) == 3 and isinstance(size[-1], int):
                return int(size[-1])
    return None


_SIDE_NAMES = re.compile(
    r"img|image|input_size|resolution|feat_?size|feature_size|grid_size|^size$|^hw$"
)


def ctor_side(ctor: Mapping[str, object]) -> int | None:
    """The spatial side a constructor argument fixes (``img_size``, ``feat_size``), if any."""
    for key, value in ctor.items():
        if not _SIDE_NAMES.search(key.lower()):
            continue
        last = value[-1] if isinstance(value, (tuple, list)) and value else value
        if isinstance(last, int) and not isinstance(last, bool) and 2 <= last <= 512:
            return last
    return None


def primary_specs(
    module: nn.Module, profile: Profile, ctor: Mapping[str, object]
) -> list[dict[str, Any]]:
    """Candidate specs for the first input, best first."""
    kind, size, extra = first_layer(module)
    sig = signature_of(type(module))
    defaults = {
        name: param.default
        for name, param in (sig.parameters.items() if sig else ())
        if param.default is not param.empty
    }
    known = ctor_side(ctor) or model_side(module) or ctor_side(defaults)
    side = known or profile.img
    s, n = side, profile.seq
    channels = pooled_channels(module)
    if channels is not None:  # the convolutions come from outside (a placeholder)
        return [tensor_spec([2, channels, k, k]) for k in dict.fromkeys([s, 2 * s])]
    if kind == "image":
        sides = dict.fromkeys([s, 2 * s, 224] if s < 224 else [s])
        return [tensor_spec([2, size, k, k]) for k in sides]
    if kind == "signal":
        return [tensor_spec([2, size, 64]), tensor_spec([2, size, 256])]
    if kind == "volume":
        return [tensor_spec([2, size, 8, 8, 8]), tensor_spec([2, size, 16, 16, 16])]
    if kind == "flat":
        return [tensor_spec([2, size]), tensor_spec([2, size, n])]
    grid = [tensor_spec([2, s * s, size or profile.dim])] if known and s * s <= 4096 else []
    if kind == "tokens":
        return [
            *grid,
            tensor_spec([2, *extra, n, size]) if extra else tensor_spec([2, n, size]),
            tensor_spec([2, size]),
            tensor_spec([2, size, 4, 4]),
        ]
    if kind == "ids":
        sizes = [e.num_embeddings for e in module.modules() if isinstance(e, nn.Embedding)]
        return [tensor_spec([2, n], "int64", max(1, min([*sizes, 100])))]
    d = profile.dim
    return [
        *([tensor_spec([2, d, s, s])] if known else []),
        *grid,
        tensor_spec([2, d, 8, 8]),
        tensor_spec([2, n, d]),
        tensor_spec([2, d]),
        tensor_spec([2, 3, s, s]),
    ]


def pooled_channels(module: nn.Module) -> int | None:
    """The channels of the image a module takes when its first shape-defining layer is a
    linear one right after an adaptive pooling to ``(h, w)`` (pool, flatten, classify: the
    feature layers are an argument): the linear layer's inputs over ``h * w``."""
    pooled: int | None = None
    for layer in module.modules():
        if isinstance(layer, (nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)) and pooled is None:
            size: Any = layer.output_size
            sides = [size, size] if isinstance(size, int) else list(size or ())
            if len(sides) != 2 or not all(isinstance(v, int) for v in sides):
                return None
            pooled = sides[0] * sides[1]
        elif isinstance(layer, nn.Linear):
            if pooled is None or layer.in_features % pooled:
                return None
            return layer.in_features // pooled
        elif isinstance(layer, _SHAPED):
            return None
    return None


_SHAPED = (
    nn.Conv1d,
    nn.Conv2d,
    nn.Conv3d,
    nn.ConvTranspose1d,
    nn.ConvTranspose2d,
    nn.ConvTranspose3d,
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.GroupNorm,
    nn.LayerNorm,
    nn.MultiheadAttention,
    nn.RNNBase,
    nn.Embedding,
)
"""Layers that fix the shape of what reaches them (those :func:`first_layer` looks for)."""


def forward_params(module: nn.Module) -> list[inspect.Parameter]:
    """``forward``'s parameters; a ``# type: (...) -> ...`` comment, else the types its
    docstring documents (``x (list[torch.Tensor]): ...``), stand in for annotations."""
    sig = signature_of(module.forward)
    params = list(sig.parameters.values()) if sig else []
    comment = _type_comment(module.forward)
    if comment is not None and len(comment) == len(params):
        params = [
            p.replace(annotation=text) if p.annotation is p.empty else p
            for p, text in zip(params, comment, strict=True)
        ]
    bare = [p.name for p in params if p.annotation is p.empty]
    documented = documented_types(type(module), "forward", bare) if bare else {}
    return [p.replace(annotation=documented[p.name]) if p.name in documented else p for p in params]


def _type_comment(func: Any) -> list[str] | None:
    """The argument types of a PEP 484 ``# type: (A, B) -> C`` comment under ``def``."""
    try:
        lines = inspect.getsource(func).splitlines()
    except (OSError, TypeError):
        return None
    for line in lines[:12]:
        if m := re.match(r"\s*# type: \((.*)\) ->", line):
            return split_top(m.group(1))
    return None


def input_candidates(
    module: nn.Module,
    profile: Profile,
    ctor: Mapping[str, object],
    plugins: pluggy.PluginManager | None = None,
) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """Input spec lists (positional, keyword) to try, best first.

    The ``nnrag_input_candidates`` hooks answer first (built in: graph inputs); a block any
    plugin answered for gets only the plugins' candidates.
    """
    params = forward_params(module)
    manager = plugins if plugins is not None else builtin_child_manager()
    answers = manager.hook.nnrag_input_candidates(
        block=module, params=params, profile=profile, ctor=dict(ctor)
    )
    if answers:
        for answer in answers:
            for args, kwargs in answer:
                yield list(args), dict(kwargs)
        return
    specs = primary_specs(module, profile, ctor)
    d, side = profile.dim, profile.img
    for extra in ([2, d, side, side], [2, profile.seq, d], [2, d]):
        if all(spec["shape"] != extra for spec in specs):
            specs.append(tensor_spec(extra))
    keys = dict_keys(module.forward)
    named = ctor_names(ctor)
    if named:  # ``Dict[str, ...]`` inputs forward reads by the constructor's names
        for p in params:
            if p.name not in keys and _DICT_OF.match(_text(p.annotation)):
                keys[p.name] = named
    scope = globals_of(module.forward)
    levels = level_inputs(params, {**ctor_defaults(module), **ctor}, profile.img, module)
    if levels is not None:  # ``in_channels=[16, 32]``: one feature map per level, first
        args, kwargs = fill_inputs(params, levels[0], profile, keys, scope)
        spread = params[0].kind == params[0].VAR_POSITIONAL  # forward(*inputs)
        yield [*levels, *args[1:]] if spread else [levels, *args[1:]], kwargs
    documented = given_inputs(module, params, profile)
    if documented:  # the shapes forward's docstring and layers give its arguments, first
        primary = first_documented(params, documented) or specs[0]
        yield fill_inputs(params, primary, profile, keys, scope, documented=documented)
    for primary in specs:
        yield fill_inputs(params, primary, profile, keys, scope)


def given_inputs(
    module: nn.Module, params: list[inspect.Parameter], profile: Profile
) -> dict[str, Any]:
    """Specs by argument name from ``forward``'s docstring (:func:`documented_inputs`) and,
    for the arguments after the first, from the first layer each meets (:func:`met_inputs`);
    empty unless one of them is about an argument after the first (the first one's
    candidates are :func:`primary_specs`)."""
    documented = documented_inputs(module, params, profile)
    required = [
        p.name
        for p in params
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    met_all = met_inputs(module, params, profile)
    met = {k: v for k, v in met_all.items() if k in required[1:]}
    if required and required[0] in met_all and first_met_elsewhere(module, required):
        met[required[0]] = met_all[required[0]]
    given = {**met, **documented}
    return given if set(given) & set(required[1:]) or documented else {}


def fill_inputs(
    params: list[inspect.Parameter],
    primary: dict[str, Any],
    profile: Profile,
    keys: Mapping[str, list[str]] | None = None,
    scope: Mapping[str, Any] | None = None,
    *,
    documented: Mapping[str, Any] | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """Values for ``forward``'s required arguments: ``primary`` the first, the others by
    name and annotation beside it (``documented``: specs that take precedence, by name)."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    first, sizes = True, False
    shape = primary["shape"]
    # forward(input_ids=None, attention_mask=None, ...): everything optional, the first one
    # is the input (feeding nothing only tests the block's "nothing given" error)
    optional_first = not any(
        p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params
    ) and any(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
    for p in params:
        if p.kind == p.VAR_KEYWORD:
            continue
        if p.kind == p.VAR_POSITIONAL:
            if first:
                args.append(primary)
                first = False
            continue
        if p.default is not p.empty and not (optional_first and first):
            continue
        chosen = literal_choice(p.annotation, scope or {}) if not first else _NO_CHOICE
        if chosen is not _NO_CHOICE:  # forward(..., *, mode: Literal["train", "test"] | None)
            if p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = chosen
            else:
                args.append(chosen)
            continue
        ints = int_tuple(p.annotation, shape)
        if ints is not None:  # forward(shape: Tuple[int, int, int])
            if p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = ints
            else:
                args.append(ints)
            continue
        named = (keys or {}).get(p.name, [])
        if documented and p.name in documented:
            found = documented[p.name]
            given = (
                container(dict(found), p.annotation, named) if isinstance(found, dict) else found
            )
            first = False
            if p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = given
            else:
                args.append(given)
            continue
        sizes = sizes or (first and _BATCH_NAMES.match(p.name.lower()) is not None)
        scalar = sizes and p.annotation in (int, "int", MISSING_ANN)  # forward(B, H, W)
        if first and not (scalar and _SCALAR_NAMES.match(p.name.lower())):
            value: Any = container(primary, p.annotation, named)
            first = False
        else:
            value = secondary(p.name, shape, p.annotation, profile)
            if _is_float_spec(value) and primary.get("dtype") == "int64":
                value = dict(primary)  # index-like forward: every tensor argument indexes
            value = container(value, p.annotation, named)
        holder = plain_class(p.annotation, scope or {})
        if holder is not None:
            value = instance_spec(holder, primary if value is primary else value, profile)
        if re.fullmatch(r"images?|imgs?|image_list", p.name.lower()) and isinstance(value, list):
            value = [unbatched(v) for v in value]  # detection style: a list of (C, H, W) images
        if p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    return args, kwargs


_NO_CHOICE = object()


def literal_choice(annotation: Any, scope: Mapping[str, Any]) -> Any:
    """The value for an argument annotated with ``Literal`` choices: ``None`` where the
    annotation allows it (``mode: Literal["training", "testing"] | None``: the default
    behaviour), else the first choice; :data:`_NO_CHOICE` for any other annotation (a string
    one is evaluated in the block's namespace)."""
    if isinstance(annotation, str):
        try:
            annotation = eval(annotation, dict(scope))  # the block file's own annotation
        except Exception:
            return _NO_CHOICE
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)[0]
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return _NO_CHOICE
    members = typing.get_args(annotation)
    literals = [m for m in members if typing.get_origin(m) is typing.Literal]
    if not literals or any(m is not type(None) and m not in literals for m in members):
        return _NO_CHOICE
    return None if type(None) in members else typing.get_args(literals[0])[0]


def int_tuple(annotation: Any, shape: list[int]) -> dict[str, list[int]] | None:
    """Sizes for a ``Tuple[int, ...]`` argument: (B, H, W), (H, W) or (B, C, H, W) of the input."""
    text = annotation if isinstance(annotation, str) else repr(annotation)
    m = re.fullmatch(
        r"(typing\.)?(Tuple|tuple)\[int(, int)*\]", text.replace(" ", "").replace(",", ", ")
    )
    if m is None:
        return None
    count = text.count("int")
    side = shape[-1] if len(shape) == 4 else max(2, math.isqrt(shape[1]) if len(shape) == 3 else 8)
    values = {2: [side, side], 3: [2, side, side], 4: [2, shape[1], side, side]}
    return {"__tuple__": values.get(count, [side] * count)}


def plain_class(annotation: Any, scope: Mapping[str, Any]) -> type | None:
    """The block file's own non-module class an argument is annotated with (``ImageList``)."""
    value = scope.get(annotation) if isinstance(annotation, str) else annotation
    if (
        isinstance(value, type)
        and not issubclass(value, (nn.Module, torch.Tensor))
        and value.__module__ == scope.get("__name__")
        and "__init__" in vars(value)
    ):
        return value
    return None


def instance_spec(cls: type, tensor: Any, profile: Profile) -> Any:
    """A spec that builds ``cls`` from its ``__init__``: tensors first, then sizes and names."""
    sig = signature_of(cls)
    if sig is None or not (isinstance(tensor, dict) and "shape" in tensor):
        return tensor
    shape = tensor["shape"]
    args: list[Any] = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        text = p.annotation if isinstance(p.annotation, str) else repr(p.annotation)
        if not args:
            args.append(tensor)
        elif re.search(r"(List|list)\[(typing\.)?(Tuple|tuple)\[int", text) and len(shape) == 4:
            args.append([{"__tuple__": shape[-2:]}] * shape[0])  # per-image sizes
        else:
            args.append(container(secondary(p.name, shape, p.annotation, profile), p.annotation))
    return {"__new__": {"__ref__": f"{cls.__module__}:{cls.__qualname__}"}, "args": args}


def unbatched(spec: Any) -> Any:
    """A 4-D image spec without its batch dimension (other values unchanged)."""
    if _is_float_spec(spec) and len(spec["shape"]) == 4:
        return dict(spec, shape=spec["shape"][1:])
    return spec


def _is_float_spec(value: Any) -> bool:
    return isinstance(value, dict) and "shape" in value and value.get("dtype") == "float32"


def ctor_names(ctor: Mapping[str, object]) -> list[str]:
    """The first list of distinct non-empty names among the constructor arguments (node
    types, keys): what a dict input is keyed by when forward reads it by them."""
    for value in ctor.values():
        if (
            isinstance(value, (list, tuple))
            and value
            and all(isinstance(v, str) and v for v in value)
            and len(set(value)) == len(value)
        ):
            return [str(v) for v in value]
    return []


def _text(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else repr(annotation)


_DICT_OF = re.compile(r"(typing\.)?(Dict|dict|Mapping|OrderedDict)\[str, *(.*)\]$")
"""A dict annotation with string keys; group 3 is the value type."""
_TENSOR_FIRST = re.compile(r"(torch\.)?Tensor *\|")
"""A union whose first choice is one tensor (``torch.Tensor | list[torch.Tensor]``)."""
_TUPLES_THEN_TENSOR = re.compile(
    r"(typing\.)?(List|list)\[(typing\.)?(Tuple|tuple)\[[\w., ]*Tensor[\w., ]*\] *\|"
    r" *(torch\.)?Tensor\]$"
)
"""``list[tuple[Tensor, ...] | Tensor]``: outputs of several layers, each a tuple, then a map."""
_SEQUENCE_OF = re.compile(r"(typing\.)?(List|list|Sequence|Tuple|tuple|Iterable)\[.*Tensor")


def container(spec: Any, annotation: Any, keys: list[str] | None = None) -> Any:
    """Wrap a tensor spec into the list or dict of tensors that ``annotation`` asks for.

    ``keys``: the string keys forward reads from this argument (a dict even unannotated).
    """
    if not (isinstance(spec, dict) and "shape" in spec):
        return spec
    text = _text(annotation)
    if _TENSOR_FIRST.match(text):  # ``Tensor | list[Tensor]``: the tensor
        return spec
    of = _DICT_OF.match(text)
    if of is not None and _SEQUENCE_OF.match(of.group(3)):  # ``Dict[str, List[Tensor]]``
        return {"__dict__": {k: [keyed(k, spec), keyed(k, spec)] for k in keys or ["0", "1"]}}
    if _TUPLES_THEN_TENSOR.match(text):  # tuples of tensors, the last item a tensor
        return [{"__tuple__": [spec, dict(spec)]}, dict(spec)]
    if _SEQUENCE_OF.search(text):
        return [spec, dict(spec)]
    if keys or re.search(r"(Dict|dict|Mapping|OrderedDict)\[str, *.*Tensor", text):
        return {"__dict__": {k: keyed(k, spec) for k in keys or ["0", "1"]}}
    return spec


def keyed(key: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The tensor under ``key`` of a dict input: masks/valid flags and coordinates by name."""
    shape = spec["shape"]
    low = key.lower()
    if len(shape) >= 3 and re.search(r"valid|mask", low):
        return tensor_spec(shape[:2], "bool")
    if len(shape) >= 3 and re.search(r"coord|position|pos_ids", low):
        return tensor_spec([*shape[:2], 2], "int64", max(2, math.isqrt(shape[1])))
    return dict(spec)


MISSING_ANN = inspect.Parameter.empty
_BATCH_NAMES = re.compile(r"^(b|bs|bsz|batch_size)$")
_SCALAR_NAMES = re.compile(r"^(b|bs|bsz|batch_size|h|w|height|width)$")


def secondary(name: str, shape: list[int], annotation: Any, profile: Profile) -> Any:
    low = name.lower()
    if annotation in (bool, "bool"):  # a flag, even named ``multimask_output``
        return False
    if "mask" in low:
        return None
    if _BATCH_NAMES.match(low) and annotation in (int, "int", MISSING_ANN):
        return shape[0]
    tensor = annotation is torch.Tensor or annotation in ("Tensor", "torch.Tensor")
    if not tensor and (
        low in {"h", "w", "height", "width", "hh", "ww"} or low.endswith(("_h", "_w"))
    ):
        return shape[-2] if len(shape) == 4 else math.isqrt(shape[1] if len(shape) > 2 else 16)
    if re.search(r"thw|t_h_w", low):  # video: (T, H, W) beside tokens or a 5-D clip
        if len(shape) == 5:
            return {"__tuple__": shape[-3:]}
        side = math.isqrt(shape[1]) if len(shape) == 3 else 4
        return {"__tuple__": [1, side, side]}
    if re.search(r"hw|size|shape|resolution", low):
        if len(shape) == 4:
            return {"__tuple__": shape[-2:]}
        side = math.isqrt(shape[1]) if len(shape) == 3 else 4
        return {"__tuple__": [side, side]}
    if re.search(r"^(t|time|times|timesteps?|noise_level|sigma)$", low):
        return tensor_spec([shape[0]])
    if _INDEX_NAMES.match(low):
        return tensor_spec(shape[:2], "int64", 10)
    if annotation in (int, "int"):
        value = int_for(name, profile)
        return 1 if value is MISSING else value
    if annotation in (bool, "bool"):
        return False
    if annotation in (float, "float"):  # a threshold or a scale, not a tensor
        return float_for(name)
    text = annotation if isinstance(annotation, str) else repr(annotation)
    if re.search(r"(List|list|Sequence|Tuple|tuple)\[str\b", text):
        return ["0", "1"]  # names beside a list of two tensors
    return dict(tensor_spec(list(shape)))


def build_inputs(
    args: list[Any], kwargs: dict[str, Any], seed: int
) -> tuple[list[Any], dict[str, Any]]:
    seed_cpu(seed)

    def build(value: Any) -> Any:
        if isinstance(value, dict) and ("zeros" in value or "graph" in value):
            return build_graph(value)
        if isinstance(value, dict) and "__new__" in value:  # an instance of the file's class
            cls = decode(value["__new__"])
            assert callable(cls)
            return cls(*[build(a) for a in value["args"]])
        return decode(value)

    return [build(a) for a in args], {k: build(v) for k, v in kwargs.items()}


_NONE_USED = re.compile(
    r"'NoneType' object (has no attribute|is not subscriptable|is not iterable)"
    r"|unsupported operand type\(s\) for .*'NoneType'|not NoneType|NoneType' and"
)
"""forward used an argument left at its ``None`` default as a value."""
_LITERALS = (bool, int, float, str, type(None))


def optional_inputs(
    message: str, module: nn.Module, args: list[Any], kwargs: dict[str, Any], profile: Profile
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs again with every ``None``-defaulted argument of ``forward`` (and every
    argument given as ``None``, such as a required mask) given a value (a tensor like the
    first input, a mask of its tokens, sizes by name), when the error says forward used one
    of them as a value (``memory + pos``, ``mask.sigmoid()``).

    Positional after the given ones while every skipped argument has a literal default
    (kept), keyword arguments after that; ``None`` when nothing is left to give.
    """
    params = [p for p in forward_params(module) if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    named = _named_missing(message, params, args, kwargs)
    if not _NONE_USED.search(message) and not named:
        return None
    first = next((a for a in args if isinstance(a, dict) and "shape" in a), None)
    if first is None:
        return None
    shape = list(first["shape"])
    side = model_side(module) or profile.img
    if named:  # "You have to specify pixel_values": only what the error names
        given = {p.name: optional_value(p.name, shape, p.annotation, profile, side) for p in named}
        return list(args), {**kwargs, **given}
    new_args, new_kwargs, positional, changed = list(args), dict(kwargs), True, False
    for i, p in enumerate(params[: len(args)]):  # a required mask given as None
        if args[i] is None and p.kind != p.KEYWORD_ONLY:
            new_args[i] = optional_value(p.name, shape, p.annotation, profile)
            changed = True
    for p in params[len(args) :]:
        if p.name in kwargs:
            positional = False
            continue
        if p.default is None:
            value = optional_value(p.name, shape, p.annotation, profile)
            changed = True
        elif positional and isinstance(p.default, _LITERALS) and p.kind != p.KEYWORD_ONLY:
            value = p.default
        else:
            positional = False
            continue
        if positional and p.kind != p.KEYWORD_ONLY:
            new_args.append(value)
        elif p.default is None:
            new_kwargs[p.name] = value
    return (new_args, new_kwargs) if changed else None


def _named_missing(
    message: str, params: list[inspect.Parameter], args: list[Any], kwargs: dict[str, Any]
) -> list[inspect.Parameter]:
    """The ``None``-defaulted ``forward`` parameters, not given, that the error names (a
    block's own check: ``raise ValueError("You have to specify pixel_values")``)."""
    return [
        p
        for i, p in enumerate(params)
        if p.default is None
        and p.name not in kwargs
        and (i >= len(args) or args[i] is None)
        and p.kind != p.POSITIONAL_ONLY
        and re.search(rf"(?<![\w.]){re.escape(p.name)}(?!\w)", message)
    ]


def optional_value(
    name: str, shape: list[int], annotation: Any, profile: Profile, side: int | None = None
) -> Any:
    """A value for an optional ``forward`` argument: masks keep every token (``True``) of the
    first input (``(B, N)`` for tokens, ``(B, H, W)`` for images), images (``pixel_values``)
    are ``(B, 3, side, side)`` at the model's side, the rest as :func:`secondary`."""
    low = name.lower()
    if "mask" in low:
        return tensor_spec(mask_shape(shape), "bool")
    if re.search(r"pixel|image|img", low) and not re.search(
        r"sizes?$|shapes?$|metas?$|ids?$|embeds?$|embeddings?$", low
    ):
        size = side or profile.img
        return tensor_spec([shape[0], 3, size, size])
    return secondary(name, shape, annotation, profile)


def mask_shape(shape: list[int]) -> list[int]:
    """The shape of a mask over the first input's positions (tokens or pixels)."""
    if len(shape) == 4:
        return [shape[0], *shape[2:]]
    return list(shape[:2]) if len(shape) >= 2 else list(shape)
