"""Runs in the sandbox child: import a block file, find constructor arguments and inputs, run it."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import math
import re
import sys
import time
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from torch import nn

Send = Callable[[dict[str, Any]], None]
MAX_ATTEMPTS = 40
"""Hard bound on constructor plus forward attempts per block."""
_MISSING = object()


# --------------------------------------------------------------------------- values <-> JSON


def encode(value: object, *, strict: bool = False) -> object:
    """A JSON value describing ``value`` (tensors as specs, classes by qualified name)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, torch.Tensor):
        spec: dict[str, object] = {"shape": list(value.shape), "dtype": str(value.dtype)[6:]}
        if not value.is_floating_point() and value.dtype != torch.bool and value.numel():
            spec["high"] = int(value.max()) + 1
        return spec
    if isinstance(value, (list, tuple)):
        items = [encode(v, strict=strict) for v in value]
        return items if isinstance(value, list) else {"__tuple__": items}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: encode(v, strict=strict) for k, v in value.items()}}
    if isinstance(value, type) or inspect.isfunction(value) or inspect.isbuiltin(value):
        return {"__ref__": f"{value.__module__}:{value.__qualname__}"}
    if strict:
        raise TypeError(f"cannot describe {type(value).__name__}")
    return {"__repr__": repr(value)[:200]}


def decode(value: object, module: object = None) -> object:
    """Rebuild a value from :func:`encode` output (tensor specs become seeded tensors)."""
    if isinstance(value, list):
        return [decode(v, module) for v in value]
    if not isinstance(value, dict):
        return value
    if "__tuple__" in value:
        return tuple(decode(v, module) for v in value["__tuple__"])
    if "__dict__" in value:
        return {k: decode(v, module) for k, v in value["__dict__"].items()}
    if "__ref__" in value:
        mod_name, _, qual = str(value["__ref__"]).partition(":")
        target: Any = sys.modules.get(mod_name) or importlib.import_module(mod_name)
        for part in qual.split("."):
            target = getattr(target, part)
        return target
    if "shape" in value:
        return make_tensor(value)
    return value


def make_tensor(spec: Mapping[str, Any]) -> torch.Tensor:
    """A tensor for an input spec ``{"shape", "dtype", "high"}``."""
    shape = [int(s) for s in spec["shape"]]
    dtype = getattr(torch, str(spec.get("dtype", "float32")))
    if dtype == torch.bool:
        return torch.ones(shape, dtype=torch.bool)
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype)
    return torch.randint(0, max(1, int(spec.get("high", 2))), shape, dtype=dtype)


def tensor_spec(
    shape: list[int], dtype: str = "float32", high: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"shape": shape, "dtype": dtype}
    if high is not None:
        spec["high"] = high
    return spec


# --------------------------------------------------------------------------- size profiles


@dataclass(frozen=True, slots=True)
class Profile:
    """One consistent set of sizes: related names get related values, heads divide dims."""

    dim: int = 32
    heads: int = 2
    hidden: int = 64
    img: int = 32
    seq: int = 16
    norm: str = "layer"


PROFILES = (
    Profile(),
    Profile(dim=64, heads=4, hidden=128, img=64, norm="batch"),
    Profile(dim=16, heads=1, hidden=32, img=16),
)

_INT_RULES: tuple[tuple[str, Callable[[Profile], object]], ...] = (
    (r"head_?dim|dim_?head|d_head|head_size|key_dim|d_k$|d_v$", lambda p: p.dim // p.heads),
    (r"(^|_)(num_|n_)?heads?$|nhead|num_attention_heads", lambda p: p.heads),
    (r"num_groups|gn_groups|norm_groups", lambda p: 4),
    (r"classes|num_labels|n_class", lambda p: 10),
    (r"vocab|num_embeddings|num_tokens|n_tokens|n_vocab|num_words", lambda p: 100),
    (r"kernel|ksize|k_size", lambda p: 3),
    (r"stride", lambda p: 1),
    (r"dilation|groups", lambda p: 1),
    (r"padding|^pad", lambda p: 1),
    (r"patch", lambda p: 4),
    (r"window", lambda p: 4),
    (r"img|image|resolution|input_size|^size$|^hw$", lambda p: p.img),
    (r"(seq|max|context|block)_?(len|length)|positions|n_ctx|max_len", lambda p: 64),
    (r"depths?$|layers$|num_blocks|n_blocks|blocks$|repeats|stages", lambda p: 1),
    (r"num_experts|experts", lambda p: 2),
    (r"top_?k", lambda p: 1),
    (r"reduction|ratio|expan", lambda p: 4),
    (r"scale|factor", lambda p: 2),
    (r"hidden|ffn|mlp|intermediate|inner|feedforward|d_ff|ff_dim|mid", lambda p: p.hidden),
    (r"rd_|reduced|squeeze|bottleneck", lambda p: p.dim // 4),
    (
        r"chan|ch$|chs$|^c\d?$|planes|feat|dim|width|d_model|embed|emb|latent|units|^nc|^nf|size|out",
        lambda p: p.dim,
    ),
    (r"^num_|^n_|^n$|count", lambda p: 2),
)
_FLOAT_RULES: tuple[tuple[str, float], ...] = (
    (r"drop|prob|rate|^p$", 0.0),
    (r"eps", 1e-5),
    (r"momentum", 0.1),
    (r"ratio|expan", 4.0),
    (r"scale|alpha|beta|gamma|temp|tau|init|weight", 1.0),
)
_TENSOR_NAMES = re.compile(
    r"^(x\d?|xs|input\w*|inp|hidden_states?|h|feat\w*|fea|img|imgs|image\w*|src|tgt|query|key|value"
    r"|q|k|v|y|z|skip|residual|context|memory|enc\w*|dec\w*|latents?|emb\w*|tokens?|data|signal"
    r"|sample|audio|points?|pos\w*|a|b|left|right|low|high|x_\w+|\w+_feats?|\w+_features)$"
)
_INDEX_NAMES = re.compile(r"^(input_ids|ids|token_ids|indices|idx|labels?|targets?|word_ids)$")


def int_for(name: str, profile: Profile) -> object:
    low = name.lower()
    for pattern, make in _INT_RULES:
        if re.search(pattern, low):
            return make(profile)
    return _MISSING


def float_for(name: str) -> float:
    low = name.lower()
    return next((v for pattern, v in _FLOAT_RULES if re.search(pattern, low)), 0.5)


# --------------------------------------------------------------------------- constructor arguments


@dataclass(slots=True)
class Ctor:
    """One constructor candidate."""

    origin: str
    args: tuple[object, ...] = ()
    kwargs: dict[str, object] = field(default_factory=dict)
    placeholders: list[str] = field(default_factory=list)


def _hints(init: inspect.Signature | None, owner: Any) -> dict[str, Any]:
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


def signature_of(func: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


class Synth:
    """Synthesizes values for required parameters from annotations and names."""

    def __init__(self, module: Any, profile: Profile, depth: int = 0) -> None:
        self.module = module
        self.profile = profile
        self.depth = depth
        self.placeholders: list[str] = []

    def value(self, name: str, annotation: Any) -> object:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if annotation is inspect.Parameter.empty or annotation is Any:
            return self.by_name(name)
        if origin is typing.Union or type(annotation).__name__ == "UnionType":
            options = [a for a in args if a is not type(None)]
            if not options:
                return None
            return self.value(name, options[0])
        if origin is typing.Literal:
            return args[0]
        if origin in (tuple, typing.Tuple):  # noqa: UP006 - runtime check of old spellings
            items = [a for a in args if a is not Ellipsis] or [int]
            count = len(items) if Ellipsis not in args else 2
            return tuple(self.value(name, items[min(i, len(items) - 1)]) for i in range(count))
        if origin in (list, list, typing.Sequence) or (
            origin is not None and getattr(origin, "__name__", "") in {"Sequence", "Iterable"}
        ):
            inner = args[0] if args else int
            return [self.value(name, inner) for _ in range(2)]
        if (
            origin is not None and getattr(origin, "__name__", "") == "Callable"
        ) or annotation is Callable:
            return self.layer_factory(name)
        if origin is type and args:
            return self.layer_factory(name) if args[0] is nn.Module else args[0]
        if annotation is bool:
            return False
        if annotation is int:
            value = int_for(name, self.profile)
            return self.profile.dim if value is _MISSING else value
        if annotation is float:
            return float_for(name)
        if annotation is str:
            return self.string_for(name)
        if isinstance(annotation, type):
            import enum

            if issubclass(annotation, enum.Enum):
                return next(iter(annotation))
            if issubclass(annotation, nn.Module):
                return self.submodule(name, annotation)
            return self.config(name, annotation)
        return self.by_name(name)

    def by_name(self, name: str) -> object:
        low = name.lower()
        if re.search(r"config|cfg|conf$|args$|^opt|hparams|params$", low):
            return self.config(name, None)
        if re.search(r"act|norm|layer$|_fn$|fn$", low) and not low.startswith(("num", "n_")):
            return self.layer_factory(name)
        if re.search(r"^(use_|with_|has_|is_|no_|return_|enable|apply)|bias$|affine|inplace", low):
            return False
        if re.search(r"drop|eps|prob|momentum|temperature|^p$|alpha|beta|gamma", low):
            return float_for(name)
        value = int_for(name, self.profile)
        if value is not _MISSING:
            return value
        if re.search(r"block|module|net|encoder|decoder|backbone|model|layer|head", low):
            return self.submodule(name, None)
        return self.profile.dim

    def string_for(self, name: str) -> str:
        low = name.lower()
        if "act" in low:
            return "relu"
        if "norm" in low:
            return "batchnorm" if self.profile.norm == "batch" else "layernorm"
        if "pad" in low:
            return "same"
        if "mode" in low:
            return "nearest"
        return ""

    def layer_factory(self, name: str) -> object:
        low = name.lower()
        if "norm" in low:
            return nn.BatchNorm2d if self.profile.norm == "batch" else nn.LayerNorm
        if "act" in low:
            return nn.ReLU
        self.placeholders.append(name)
        return nn.Identity

    def submodule(self, name: str, cls: type[nn.Module] | None) -> object:
        if (
            cls is not None
            and cls is not nn.Module
            and not inspect.isabstract(cls)
            and self.depth < 2
        ):
            inner = Synth(self.module, self.profile, self.depth + 1)
            try:
                args, kwargs = inner.fill(cls)
                built = cls(*args, **kwargs)
                self.placeholders.extend(inner.placeholders)
                return built
            except Exception:
                pass
        self.placeholders.append(name)
        return nn.Identity()

    def config(self, name: str, cls: type | None) -> object:
        if cls is None:
            cls = find_config_class(self.module)
        if cls is not None and self.depth < 2:
            inner = Synth(self.module, self.profile, self.depth + 1)
            try:
                args, kwargs = inner.fill(cls)
                return shrink(cls(*args, **kwargs), self.profile)
            except Exception:
                pass
        self.placeholders.append(name)
        return AutoConfig(self.profile)

    def fill(self, cls: Any) -> tuple[tuple[object, ...], dict[str, object]]:
        """Positional and keyword arguments for every required parameter of ``cls``."""
        sig = signature_of(cls)
        if sig is None:
            return (), {}
        hints = _hints(sig, getattr(cls, "__init__", cls))
        args: list[object] = []
        kwargs: dict[str, object] = {}
        for name, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if param.default is not param.empty:
                continue
            value = self.value(name, hints.get(name, param.annotation))
            if param.kind == param.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[name] = value
        return tuple(args), kwargs


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


class AutoConfig:
    """A stand-in config whose attributes are synthesized by name (a placeholder)."""

    def __init__(self, profile: Profile) -> None:
        self._profile = profile

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return Synth(None, self._profile).by_name(name)

    def __repr__(self) -> str:
        return "AutoConfig()"


def find_config_class(module: Any) -> type | None:
    if module is None:
        return None
    for name, value in vars(module).items():
        if (
            isinstance(value, type)
            and value.__module__ == module.__name__
            and re.search(r"(Config|Cfg|Args|Params)$", name)
        ):
            return value
    return None


def shrink(config: object, profile: Profile) -> object:
    """Reduce big size-like integer attributes of a config object to the profile's sizes."""
    try:
        items = dict(vars(config))
    except TypeError:
        return config
    for name, value in items.items():
        if isinstance(value, int) and not isinstance(value, bool) and value > 8:
            new = int_for(name, profile)
            if isinstance(new, int) and new < value:
                with contextlib.suppress(Exception):
                    setattr(config, name, new)
        elif isinstance(value, int) and re.search(r"layers|depth|blocks", name) and value > 2:
            setattr(config, name, 2)
    return config


# --------------------------------------------------------------------------- inputs


def first_layer(module: nn.Module) -> tuple[str, int, list[int]]:
    """(kind, size, extra) from the first shape-defining layer of ``module``."""
    for layer in module.modules():
        if isinstance(layer, (nn.Conv2d, nn.ConvTranspose2d)):
            return "image", layer.in_channels, []
        if isinstance(layer, (nn.Conv1d, nn.ConvTranspose1d)):
            return "signal", layer.in_channels, []
        if isinstance(layer, (nn.Conv3d, nn.ConvTranspose3d)):
            return "volume", layer.in_channels, []
        if isinstance(layer, (nn.BatchNorm2d, nn.InstanceNorm2d)) and layer.num_features:
            return "image", layer.num_features, []
        if isinstance(layer, nn.GroupNorm):
            return "image", layer.num_channels, []
        if isinstance(layer, nn.BatchNorm1d):
            return "flat", layer.num_features, []
        if isinstance(layer, nn.Linear):
            return "tokens", layer.in_features, []
        if isinstance(layer, nn.MultiheadAttention):
            return "tokens", layer.embed_dim, []
        if isinstance(layer, nn.LayerNorm):
            shape = list(layer.normalized_shape)
            return "tokens", shape[-1], shape[:-1]
        if isinstance(layer, nn.Embedding):
            return "ids", layer.num_embeddings, []
    return "unknown", 0, []


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


def primary_specs(
    module: nn.Module, profile: Profile, ctor: Mapping[str, object]
) -> list[dict[str, Any]]:
    """Candidate specs for the first input, best first."""
    kind, size, extra = first_layer(module)
    img = next(
        (
            v
            for k, v in ctor.items()
            if re.search(r"img|image|input_size|resolution", k) and isinstance(v, int)
        ),
        None,
    )
    side = img or model_side(module) or profile.img
    s, n = side, profile.seq
    if kind == "image":
        sides = dict.fromkeys([s, 2 * s, 224] if s < 224 else [s])
        return [tensor_spec([2, size, k, k]) for k in sides]
    if kind == "signal":
        return [tensor_spec([2, size, 64]), tensor_spec([2, size, 256])]
    if kind == "volume":
        return [tensor_spec([2, size, 8, 8, 8]), tensor_spec([2, size, 16, 16, 16])]
    if kind == "flat":
        return [tensor_spec([2, size]), tensor_spec([2, size, n])]
    if kind == "tokens":
        return [
            tensor_spec([2, *extra, n, size]) if extra else tensor_spec([2, n, size]),
            tensor_spec([2, size]),
            tensor_spec([2, size, 4, 4]),
        ]
    if kind == "ids":
        return [tensor_spec([2, n], "int64", min(size, 100))]
    d = profile.dim
    return [
        tensor_spec([2, d, 8, 8]),
        tensor_spec([2, n, d]),
        tensor_spec([2, d]),
        tensor_spec([2, 3, s, s]),
    ]


def is_graph(forward_params: list[str]) -> bool:
    return "edge_index" in forward_params or "adj" in forward_params or "adj_t" in forward_params


def forward_params(module: nn.Module) -> list[inspect.Parameter]:
    sig = signature_of(module.forward)
    return list(sig.parameters.values()) if sig else []


def input_candidates(
    module: nn.Module, profile: Profile, ctor: Mapping[str, object]
) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """Input spec lists (positional, keyword) to try, best first."""
    params = forward_params(module)
    names = [p.name for p in params]
    if is_graph(names):
        yield from graph_inputs(module, params, profile, ctor)
        return
    specs = primary_specs(module, profile, ctor)
    d, side = profile.dim, profile.img
    for extra in ([2, d, side, side], [2, profile.seq, d], [2, d]):
        if all(spec["shape"] != extra for spec in specs):
            specs.append(tensor_spec(extra))
    for primary in specs:
        yield fill_inputs(params, primary, profile)


def graph_inputs(
    module: nn.Module, params: list[inspect.Parameter], profile: Profile, ctor: Mapping[str, object]
) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    n_nodes, n_edges = 10, 30
    kind, size, _ = first_layer(module)
    channels = [size] if kind == "tokens" and size else []
    for key in ("in_channels", "in_dim", "in_feats", "channels", "dim", "hidden_channels"):
        value = ctor.get(key)
        if isinstance(value, int) and value > 0 and value not in channels:
            channels.append(value)
    channels.append(profile.dim)
    for c in channels:
        args: list[Any] = []
        for p in params:
            if p.kind in (p.VAR_KEYWORD,) or (
                p.default is not p.empty and p.name not in {"edge_index"}
            ):
                continue
            args.append(graph_value(p.name, c, n_nodes, n_edges))
        yield args, {}


def graph_value(name: str, channels: int, n_nodes: int, n_edges: int) -> Any:
    if name in {"edge_index", "adj_t"}:
        return tensor_spec([2, n_edges], "int64", n_nodes)
    if name == "adj":
        return tensor_spec([n_nodes, n_nodes])
    if name in {"batch", "ptr"}:
        return {"zeros": [n_nodes]}
    if name == "edge_weight":
        return tensor_spec([n_edges])
    if name == "edge_attr":
        return tensor_spec([n_edges, channels])
    if name in {"pos", "coords"}:
        return tensor_spec([n_nodes, 3])
    if name in {"edge_type", "node_type"}:
        return tensor_spec([n_edges if name == "edge_type" else n_nodes], "int64", 1)
    return tensor_spec([n_nodes, channels])


def fill_inputs(
    params: list[inspect.Parameter], primary: dict[str, Any], profile: Profile
) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    first = True
    shape = primary["shape"]
    for p in params:
        if p.kind == p.VAR_KEYWORD:
            continue
        if p.kind == p.VAR_POSITIONAL:
            if first:
                args.append(primary)
                first = False
            continue
        if p.default is not p.empty:
            continue
        if first:
            value: Any = primary
            first = False
        else:
            value = secondary(p.name, shape, p.annotation, profile)
        if p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    return args, kwargs


def secondary(name: str, shape: list[int], annotation: Any, profile: Profile) -> Any:
    low = name.lower()
    if "mask" in low:
        return None
    if low in {"h", "w", "height", "width", "hh", "ww"} or low.endswith(("_h", "_w")):
        return shape[-2] if len(shape) == 4 else math.isqrt(shape[1] if len(shape) > 2 else 16)
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
        return 1 if value is _MISSING else value
    if annotation in (bool, "bool"):
        return False
    return dict(tensor_spec(list(shape)))


def build_inputs(
    args: list[Any], kwargs: dict[str, Any], seed: int
) -> tuple[list[Any], dict[str, Any]]:
    torch.manual_seed(seed)

    def build(value: Any) -> Any:
        if isinstance(value, dict) and "zeros" in value:
            return torch.zeros(value["zeros"], dtype=torch.long)
        return decode(value)

    return [build(a) for a in args], {k: build(v) for k, v in kwargs.items()}


_SHAPE_WORDS = re.compile(
    r"shape|size|dimension|channels|mat1|unpack|expected .*input|rank|must match|index"
    r"|out of range|divisible",
    re.I,
)


def repair(message: str, args: list[Any], profile: Profile) -> list[Any] | None:
    """A new input list derived from a shape error message, or ``None``."""
    if not args or not isinstance(args[0], dict) or "shape" not in args[0]:
        return None
    spec = dict(args[0])
    shape = list(spec["shape"])
    new: list[int] | None = None
    if m := re.search(r"to have (\d+) channels, but got (\d+) channels", message):
        new = [shape[0], int(m.group(1)), *shape[2:]] if len(shape) > 1 else None
    elif m := re.search(
        r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)", message
    ):
        want = int(m.group(3))
        if shape[-1] != want:
            new = [*shape[:-1], want]
    elif m := re.search(r"expected input with shape \[\*, ([\d, ]+)\]", message):
        tail = [int(v) for v in m.group(1).split(",")]
        new = [shape[0], *shape[1 : max(1, len(shape) - len(tail))], *tail]
    elif m := re.search(r"\d+D \(unbatched\) or (\d+)D \(batched\)", message):
        new = reshape_rank(shape, int(m.group(1)), profile)
    elif m := re.search(
        r"[Ee]xpected (\d)D|[Ee]xpected (\d)-dimensional|[Ee]xpected (\d) dim", message
    ):
        rank = int(next(g for g in m.groups() if g))
        new = reshape_rank(shape, rank, profile)
    elif m := re.search(
        r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
        r" at non-singleton dimension (\d+)",
        message,
    ):
        a, b, dim = (int(g) for g in m.groups())
        if dim < len(shape) and shape[dim] in (a, b):
            new = list(shape)
            new[dim] = b if shape[dim] == a else a
    elif m := re.search(r"doesn't match model \((\d+)", message):
        want = int(m.group(1))
        new = [*shape[:-2], want, want] if len(shape) == 4 else None
    elif m := re.search(r"divisible by (\d+)", message):
        step = int(m.group(1))
        if len(shape) == 4 and 1 < step <= 64:
            side = -(-shape[-1] // step) * step
            side = side if side != shape[-1] else side * 2
            new = [*shape[:-2], side, side]
    elif m := re.search(r"in range of \[-(\d+), (\d+)\], but got (-?\d+)", message):
        got = int(m.group(3))
        new = reshape_rank(shape, got + 1 if got >= 0 else -got, profile)
    elif m := re.search(r"not enough values to unpack \(expected (\d+), got (\d+)\)", message):
        if int(m.group(2)) == len(shape):
            new = reshape_rank(shape, int(m.group(1)), profile)
    elif m := re.search(r"too many values to unpack \(expected (\d+)\)", message):
        if len(shape) > int(m.group(1)):
            new = reshape_rank(shape, int(m.group(1)), profile)
    elif re.search(
        r"Kernel size can't be greater|Output size is too small|smaller than|too small"
        r"|Padding size should be less",
        message,
    ):
        new = (
            [*shape[:-2], *(s * 4 for s in shape[-2:])]
            if len(shape) >= 3 and shape[-1] < 224
            else None
        )
    elif re.search(
        r"Long, Int|scalar type Long|expected scalar type Long"
        r"|Expected tensor for argument #1 'indices'",
        message,
    ):
        spec.update(dtype="int64", high=10)
        return [spec, *args[1:]]
    if new is None or new == shape or any(v <= 0 for v in new) or math.prod(new) > 50_000_000:
        return None
    spec["shape"] = new
    rest = [
        dict(a, shape=list(new)) if isinstance(a, dict) and a.get("shape") == shape else a
        for a in args[1:]
    ]
    return [spec, *rest]


def reshape_rank(shape: list[int], rank: int, profile: Profile) -> list[int] | None:
    """Re-shape a tensor spec to ``rank`` keeping the feature/channel size where it can."""
    if rank == len(shape):
        return None
    if len(shape) == 4:  # B C H W
        channels = shape[1]
    elif len(shape) >= 2:
        channels = shape[-1]
    else:
        channels = profile.dim
    side = 8
    return {
        1: [channels],
        2: [2, channels],
        3: [2, profile.seq, channels],
        4: [2, channels, side, side],
        5: [2, channels, 4, side, side],
    }.get(rank)


# --------------------------------------------------------------------------- harvesting


class Harvester:
    """Wraps ``__init__``/``forward`` of the file's own classes to record real arguments."""

    def __init__(self, module: Any, skip: type) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.saved: list[tuple[type, str, Any]] = []
        for value in list(vars(module).values()):
            if (
                isinstance(value, type)
                and issubclass(value, nn.Module)
                and value.__module__ == module.__name__
                and value is not skip
            ):
                self.wrap(value)

    def wrap(self, cls: type) -> None:
        owner: Any = cls
        init, forward = owner.__init__, owner.forward
        records = self.records

        @functools.wraps(init)
        def wrapped_init(self_: Any, *args: Any, **kwargs: Any) -> None:
            try:
                seen = {
                    "init_args": [encode(a, strict=True) for a in args],
                    "init_kwargs": {k: encode(v, strict=True) for k, v in kwargs.items()},
                }
            except TypeError:
                seen = None
            init(self_, *args, **kwargs)
            if type(self_) is cls and seen is not None:
                self_.__dict__["_nnrag_init"] = seen

        @functools.wraps(forward)
        def wrapped_forward(self_: Any, *args: Any, **kwargs: Any) -> Any:
            seen = self_.__dict__.get("_nnrag_init") if type(self_) is cls else None
            if seen is None or cls.__name__ in records:
                return forward(self_, *args, **kwargs)
            try:
                inputs = {
                    "inputs": [encode(a, strict=True) for a in args],
                    "input_kwargs": {k: encode(v, strict=True) for k, v in kwargs.items()},
                }
            except TypeError:
                inputs = None
            out = forward(self_, *args, **kwargs)
            if inputs is not None:
                records[cls.__name__] = {"class": cls.__name__, **seen, **inputs}
            return out

        self.saved.append((cls, "__init__", cls.__dict__.get("__init__")))
        self.saved.append((cls, "forward", cls.__dict__.get("forward")))
        owner.__init__ = wrapped_init
        owner.forward = wrapped_forward

    def restore(self) -> None:
        for cls, name, original in reversed(self.saved):
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


# --------------------------------------------------------------------------- running


def warm_up() -> None:
    """Import and exercise what most blocks use, once, in the warm parent."""
    import torch.nn.functional as F
    import torch.utils.checkpoint

    for name in ("numpy", "einops", "scipy.special"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    layer = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2)
    )
    out = layer(torch.randn(2, 3, 8, 8))
    F.gelu(nn.LayerNorm(2)(out)).sum().backward()  # type: ignore[no-untyped-call]
    nn.MultiheadAttention(4, 2, batch_first=True)(*(torch.randn(1, 3, 4),) * 3)


def tensors_in(value: Any, depth: int = 0) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 4:
        return []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_in(v, depth + 1)]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in tensors_in(v, depth + 1)]
    if hasattr(value, "__dataclass_fields__") or (
        hasattr(value, "__dict__") and not isinstance(value, nn.Module)
    ):
        try:
            return [t for v in vars(value).values() for t in tensors_in(v, depth + 1)]
        except TypeError:
            return []
    return []


def shapes_of(value: Any, depth: int = 0) -> object:
    if isinstance(value, torch.Tensor):
        return list(value.shape)
    if isinstance(value, (list, tuple)) and depth < 3:
        return [shapes_of(v, depth + 1) for v in value]
    if isinstance(value, Mapping) and depth < 3:
        return {str(k): shapes_of(v, depth + 1) for k, v in value.items()}
    return type(value).__name__


def classify(
    error: BaseException,
    stage: str,
    violations: list[str],
    source_packages: frozenset[str] = frozenset(),
) -> str:
    """The failure category for an exception raised in ``stage``."""
    text = f"{type(error).__name__}: {error}"
    if violations:
        return "sandbox-violation"
    if isinstance(error, MemoryError) or re.search(
        r"can't allocate memory|not enough memory|DefaultCPUAllocator", text
    ):
        return "memory"
    if re.search(
        r"undefined symbol|\.so\b|torch\.ops\.|load_library|cpp_extension|Could not run '"
        r"|No such operator",
        text,
    ):
        return "native-op"
    if stage == "import":
        if isinstance(error, ModuleNotFoundError):
            top = (error.name or "").split(".")[0]
            return "source-import" if top in source_packages else "missing-external"
        if isinstance(error, ImportError):
            return "missing-external"
        if isinstance(error, OSError):
            return "resource-file"
        return "runtime-error"
    if stage == "instantiate":
        if isinstance(error, (FileNotFoundError, IsADirectoryError)):
            return "resource-file"
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            return "runtime-error"
        return "ctor-args"
    if isinstance(error, (KeyboardInterrupt, SystemExit, OutputError)):
        return "runtime-error"
    if stage == "forward" and (
        isinstance(error, (IndexError, ValueError, TypeError)) or _SHAPE_WORDS.search(text)
    ):
        return "input-shape"
    return "runtime-error"


class OutputError(Exception):
    """Forward ran but returned no tensor or non-finite values."""


def describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) < 600 else text[:600] + "..."


class Runner:
    """One block through import, instantiate, forward and backward."""

    def __init__(self, request: Mapping[str, Any], send: Send, violations: list[str]) -> None:
        self.request = request
        self.send = send
        self.violations = violations
        self.seed = int(request.get("seed", 0))
        self.timings: dict[str, float] = {}
        self.reached: str | None = request.get("reached")
        self.recipe: dict[str, Any] = {"origin": "none", "seed": self.seed, "attempts": 0}
        self.harvest: list[dict[str, Any]] = []
        self.source_packages = frozenset(request.get("source_packages", ()))
        self.deadline = time.monotonic() + min(0.6 * float(request.get("timeout_s", 60.0)), 40.0)

    def passed(self, stage: str, started: float) -> None:
        self.timings[stage] = time.monotonic() - started
        self.reached = stage
        self.send({"kind": "stage", "stage": stage, "seconds": self.timings[stage]})

    def finish(
        self, failed: str | None = None, category: str | None = None, message: str = ""
    ) -> None:
        if failed and self.violations and category not in {"memory", "timeout"}:
            category, message = (
                "sandbox-violation",
                f"refused: {'; '.join(self.violations[:3])} ({message})",
            )
        self.send(
            {
                "kind": "result",
                "stage_reached": self.reached,
                "failed_stage": failed,
                "category": category,
                "message": message,
                "recipe": self.recipe,
                "timings": self.timings,
                "harvest": self.harvest,
            }
        )

    def violated(self, stage: str, started: float) -> bool:
        if not self.violations:
            self.passed(stage, started)
            return False
        self.finish(stage, "sandbox-violation", "refused: " + "; ".join(self.violations[:3]))
        return True

    def run(self) -> None:
        depth = str(self.request.get("depth", "forward"))
        started = time.monotonic()
        self.send({"kind": "running", "stage": "import"})
        try:
            module = load(str(self.request["path"]))
        except BaseException as error:
            self.finish(
                "import",
                classify(error, "import", self.violations, self.source_packages),
                describe(error),
            )
            return
        if self.violated("import", started) or depth == "import":
            if not self.violations:
                self.finish()
            return
        cls = getattr(module, str(self.request["class_name"]), None)
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            self.finish(
                "instantiate",
                "internal-error",
                f"{self.request['class_name']} is not an nn.Module class in the file",
            )
            return
        self.search(module, cls, depth)

    def ctor_candidates(
        self, module: Any, cls: type
    ) -> Iterator[tuple[Ctor, list[tuple[list[Any], dict[str, Any]]] | None]]:
        hints = self.request.get("hints")
        if hints:
            ctor = Ctor(
                "hinted",
                tuple(cast(list[object], decode(hints.get("init_args", [])))),
                {k: decode(v) for k, v in hints.get("init_kwargs", {}).items()},
            )
            given = hints.get("inputs")
            yield (
                ctor,
                [(list(given), dict(hints.get("input_kwargs", {})))] if given is not None else None,
            )
            return
        for record in self.request.get("harvested", ()):
            try:
                ctor = Ctor(
                    "harvested",
                    tuple(cast(list[object], decode(record["init_args"]))),
                    {k: decode(v) for k, v in record["init_kwargs"].items()},
                )
            except Exception:
                continue
            inputs = record["inputs"]
            yield ctor, [(list(inputs), dict(record.get("input_kwargs", {})))]
        seen: list[str] = []
        for profile in PROFILES:
            synth = Synth(module, profile)
            try:
                args, kwargs = synth.fill(cls)
            except Exception:
                continue
            shallow = {**kwargs, **shallow_defaults(cls)}
            for candidate in (shallow, kwargs):
                key = repr((args, candidate))
                if key in seen:
                    continue
                seen.append(key)
                yield Ctor("synthesized", args, candidate, synth.placeholders), None

    def search(self, module: Any, cls: type, depth: str) -> None:
        want_forward = depth in {"forward", "backward"}
        harvester = Harvester(module, cls) if self.request.get("harvest") and want_forward else None
        started = time.monotonic()
        self.send({"kind": "running", "stage": "instantiate"})
        attempts = 0
        ctor_error: BaseException | None = None
        forward_error: BaseException | None = None
        output_error: OutputError | None = None
        built_any = False
        forward_started = 0.0
        profile_index = 0
        for ctor, given in self.ctor_candidates(module, cls):
            profile = PROFILES[min(profile_index, len(PROFILES) - 1)]
            if ctor.origin == "synthesized":
                profile_index += 1
            if attempts >= MAX_ATTEMPTS or (time.monotonic() > self.deadline and built_any):
                break
            attempts += 1
            torch.manual_seed(self.seed)
            try:
                block = cls(*ctor.args, **ctor.kwargs)
            except (KeyboardInterrupt, SystemExit, MemoryError) as error:
                ctor_error = error
                break
            except BaseException as error:
                ctor_error = error
                continue
            self.record_ctor(ctor, block)
            if not built_any:
                built_any = True
                if self.violated("instantiate", started):
                    return
                if not want_forward:
                    self.recipe["attempts"] = attempts
                    self.finish()
                    return
                forward_started = time.monotonic()
                self.send({"kind": "running", "stage": "forward"})
            block.eval()
            queue = (
                list(given)
                if given is not None
                else list(input_candidates(block, profile, ctor.kwargs))
            )
            tried: list[str] = []
            while queue and attempts < MAX_ATTEMPTS and time.monotonic() < self.deadline:
                args, kwargs = queue.pop(0)
                key = repr((args, kwargs))
                if key in tried:
                    continue
                tried.append(key)
                attempts += 1
                try:
                    out = self.forward(block, args, kwargs)
                except (KeyboardInterrupt, SystemExit, MemoryError) as error:
                    forward_error = error
                    queue.clear()
                    break
                except BaseException as error:
                    forward_error = error
                    fixed = repair(str(error), args, profile) if given is None else None
                    if fixed is not None:
                        queue.insert(0, (fixed, kwargs))
                    continue
                self.recipe.update(
                    inputs=args,
                    input_kwargs=kwargs,
                    output_shapes=[shapes_of(out)],
                    attempts=attempts,
                )
                problem = self.check_output(out)
                if problem:
                    forward_error = output_error = OutputError(problem)
                    continue
                if harvester is not None:
                    harvester.restore()
                    self.harvest = list(harvester.records.values())
                if self.violations:
                    self.finish(
                        "forward", "sandbox-violation", "refused: " + "; ".join(self.violations[:3])
                    )
                    return
                if ctor.placeholders:
                    self.finish(
                        "forward",
                        "ctor-args",
                        f"forward ran only with placeholders for {', '.join(ctor.placeholders)}",
                    )
                    return
                self.passed("forward", forward_started)
                if depth == "backward":
                    self.backward(block, args, kwargs)
                else:
                    self.finish()
                return
            if isinstance(forward_error, (KeyboardInterrupt, SystemExit, MemoryError)):
                break
        self.recipe["attempts"] = attempts
        if not built_any:
            assert ctor_error is not None or attempts == 0
            failure = ctor_error or RuntimeError("no constructor candidate")
            self.finish(
                "instantiate", classify(failure, "instantiate", self.violations), describe(failure)
            )
            return
        failure = (
            output_error
            or forward_error
            or RuntimeError("no input candidate within the attempt bound")
        )
        self.finish("forward", classify(failure, "forward", self.violations), describe(failure))

    def record_ctor(self, ctor: Ctor, block: nn.Module) -> None:
        self.recipe.update(
            origin=ctor.origin,
            init_args=encode(list(ctor.args)),
            init_kwargs={k: encode(v) for k, v in ctor.kwargs.items()},
            parameters=sum(p.numel() for p in block.parameters()),
        )
        if ctor.placeholders:
            self.recipe["placeholders"] = list(ctor.placeholders)

    def forward(self, block: nn.Module, args: list[Any], kwargs: dict[str, Any]) -> Any:
        real_args, real_kwargs = build_inputs(args, kwargs, self.seed)
        with torch.no_grad():
            return block(*real_args, **real_kwargs)

    @staticmethod
    def check_output(out: Any) -> str:
        found = tensors_in(out)
        if not found:
            return f"forward returned no tensor (got {type(out).__name__})"
        for tensor in found:
            if (tensor.is_floating_point() or tensor.is_complex()) and not bool(
                torch.isfinite(tensor).all()
            ):
                return "forward returned non-finite values (nan or inf)"
        return ""

    def backward(self, block: nn.Module, args: list[Any], kwargs: dict[str, Any]) -> None:
        started = time.monotonic()
        self.send({"kind": "running", "stage": "backward"})
        block.train()
        try:
            real_args, real_kwargs = build_inputs(args, kwargs, self.seed)
            for value in [*real_args, *real_kwargs.values()]:
                if isinstance(value, torch.Tensor) and value.is_floating_point():
                    value.requires_grad_(True)
            out = block(*real_args, **real_kwargs)
            live = [t for t in tensors_in(out) if t.requires_grad]
            trainable = [p for p in block.parameters() if p.requires_grad]
            if not live:
                if trainable:
                    self.finish(
                        "backward",
                        "runtime-error",
                        "no output depends on a trainable parameter or input",
                    )
                    return
                self.passed("backward", started)
                self.finish()
                return
            loss = sum((t.float().mean() if not t.is_complex() else t.abs().mean()) for t in live)
            assert isinstance(loss, torch.Tensor)
            loss.backward()  # type: ignore[no-untyped-call]
        except BaseException as error:
            self.finish("backward", classify(error, "backward", self.violations), describe(error))
            return
        bad = [
            n
            for n, p in block.named_parameters()
            if p.grad is not None and not bool(torch.isfinite(p.grad).all())
        ]
        if bad:
            self.finish(
                "backward", "runtime-error", f"non-finite gradients in {', '.join(bad[:5])}"
            )
            return
        if self.violated("backward", started):
            return
        self.finish()


def load(path: str) -> Any:
    """Execute a block file as module ``nnrag_block``."""
    name = "nnrag_block"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_block(request: Mapping[str, Any], *, send: Send, violations: list[str]) -> None:
    """Entry point in the sandbox child."""
    torch.manual_seed(int(request.get("seed", 0)))
    Runner(request, send, violations).run()
