"""Runs in the sandbox child: repairs of synthesized constructor arguments from the error raised."""

from __future__ import annotations

import inspect
import math
import re
import sys
import traceback
from collections.abc import Callable, Mapping

import torch

from nnrag.validate.probe.args import Synth
from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.mappings import mapping_use
from nnrag.validate.probe.profiles import PROFILES, int_for
from nnrag.validate.probe.repair_names import failing_line, name_repairs
from nnrag.validate.probe.signatures import init_signature, signature_of, type_hints
from nnrag.validate.probe.usage import parameter_usage
from nnrag.validate.probe.values import call, remember

_NOT_A_LIST = re.compile(
    r"'(int|float)' object is not (iterable|subscriptable)|object of type '(int|float)' has no len"
    r"|cannot unpack non-iterable (int|float) object"
)
_RATE_NAMES = re.compile(r"drop|dpr|rate")


_PLURAL = r"(_list|layers|sizes|dims|depths|blocks|strides|ratios|stages|widths|kernels|dilations)$"


def listify(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: an integer argument the failing line measures or indexes (``len(sigma)``), else
    the plural-named ones, become lists when an ``int`` was not iterable."""
    if ctor.origin != "synthesized" or not _NOT_A_LIST.search(str(error)):
        return None
    plural: dict[str, object]
    if "'float'" in str(error):  # per-block rates: drop_path=[0.0, 0.0]
        sig = signature_of(cls)
        given = {
            **{n: p.default for n, p in (sig.parameters.items() if sig else ())},
            **ctor.kwargs,
        }
        plural = {
            k: [v, v] for k, v in given.items() if isinstance(v, float) and _RATE_NAMES.search(k)
        }
        line = failing_line(error)
        indexed = {k: v for k, v in plural.items() if re.search(rf"\b{k}\s*\[", line)}
        plural = indexed or plural  # only the rate the failing line indexes, when it shows
    else:
        ints = {
            k: v for k, v in ctor.kwargs.items() if isinstance(v, int) and not isinstance(v, bool)
        }
        line = failing_line(error)
        used: dict[str, object] = {
            k: [v, v] for k, v in ints.items() if re.search(rf"len\(\s*{k}\s*\)|\b{k}\[", line)
        }
        if not used and "not iterable" in str(error):  # ``all(map(f, categories))``
            used = {k: [v, v] for k, v in ints.items() if re.search(rf"\b{k}\b", line)}
        if "cannot unpack" in str(error):  # ``h, w = self.window_size``: a pair
            used = {k: (v, v) for k, v in ints.items() if re.search(rf"=\s*(self\.)?{k}\s*$", line)}
        plural = used or {  # the int the failing line measures or indexes, else plural names
            k: [v, v]
            for k, v in ints.items()
            if not k.startswith(("num_", "n_")) and re.search(_PLURAL, k)
        }
    if not plural:
        return None
    return ctor.with_kwargs(plural)


_TENSOR_AND_LIST = re.compile(r"'Tensor' and '(?:list|tuple)'|'(?:list|tuple)' and 'Tensor'")
"""A tensor operation met a list (``out_degrees[..., None] >= in_degrees``)."""


def tensorize(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: list arguments of numbers become tensors where an operation met a tensor and a
    list: those a line of the traceback names, else all of them."""
    del cls
    if (
        ctor.origin != "synthesized"
        or not isinstance(error, TypeError)
        or not _TENSOR_AND_LIST.search(str(error))
    ):
        return None
    numbers = {
        k: list(v)
        for k, v in ctor.kwargs.items()
        if isinstance(v, (list, tuple))
        and v
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
    }
    lines = _traceback_lines(error)
    named = {k: v for k, v in numbers.items() if re.search(rf"\b{re.escape(k)}\b", lines)}
    chosen = named or numbers
    if not chosen:
        return None
    return ctor.with_kwargs(
        {k: remember(torch.tensor(v), call(torch.tensor, [v])) for k, v in chosen.items()}
    )


_NUMBER_NOT_TENSOR = re.compile(r"'(?:int|float)' object has no attribute '(\w+)'")
_NUMBER_NOT_MODULE = re.compile(r"\b(?:int|float) is not a Module subclass")


def numbers_as_objects(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: a synthesized number the failing code used as a tensor (``'int' object has no
    attribute 'view'``, an attribute tensors have, read as ``name.view``) becomes a vector of
    the profile's width, alternating ones and zeros (a mask over features, the common case);
    one handed to a module container (``int is not a Module subclass``) becomes a placeholder
    module. Only the parameters a line of the traceback names."""
    if ctor.origin != "synthesized":
        return None
    text, lines = str(error), _traceback_lines(error)
    numbers = {
        k: v
        for k, v in ctor.kwargs.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    tensor_read = _NUMBER_NOT_TENSOR.search(text) if isinstance(error, AttributeError) else None
    if tensor_read is not None and hasattr(torch.Tensor, tensor_read.group(1)):
        attribute = tensor_read.group(1)
        width = (ctor.profile or PROFILES[0]).dim
        values = [float((i + 1) % 2) for i in range(width)]
        return _replaced_numbers(
            ctor,
            [k for k in numbers if re.search(rf"\b{re.escape(k)}\.{attribute}\b", lines)],
            lambda _: remember(torch.tensor(values), call(torch.tensor, [values])),
        )
    if isinstance(error, TypeError) and _NUMBER_NOT_MODULE.search(text):
        synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
        return _replaced_numbers(
            ctor,
            [k for k in numbers if re.search(rf"\b{re.escape(k)}\b", lines)],
            lambda name: synth.submodule(name, None),
        )
    return None


def _replaced_numbers(ctor: Ctor, names: list[str], value: Callable[[str], object]) -> Ctor | None:
    return ctor.with_kwargs({name: value(name) for name in names}) if names else None


_LAYER_NAMES = re.compile(r"(norm|act|conv)\w*(layer|_fn|_cls)$|^(norm|act|conv)$")


def fill_none_layers(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: layer-factory arguments that default to ``None`` but were called anyway."""
    if ctor.origin != "synthesized" or "'NoneType' object is not callable" not in str(error):
        return None
    sig = signature_of(cls)
    synth = Synth(None, ctor.profile or PROFILES[0])
    params = sig.parameters if sig else {}
    filled = {
        name: synth.layer_factory(name)
        for name, param in params.items()
        if param.default is None and name not in ctor.kwargs and _LAYER_NAMES.search(name.lower())
    }
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):  # layers passed on in **kwargs
        for name in ("act_layer", "norm_layer"):
            if name not in ctor.kwargs and name not in params:
                filled[name] = synth.layer_factory(name)
    if not filled:
        return None
    return Ctor(
        "synthesized",
        ctor.args,
        {**ctor.kwargs, **filled},
        [*ctor.placeholders, *synth.placeholders],
        ctor.profile,
        ctor.inputs,
    )


def fill_none_mappings(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: a ``None`` met where a mapping was wanted (``Part(**cfg)``, a registry build of
    ``cfg``, with ``cfg=None`` by default) gives each ``None``-defaulted parameter that a
    line of the traceback names and that the constructor uses as a mapping
    (:func:`mapping_use`) or hands to a ``build`` call a mapping value
    (:meth:`Synth.parameter`)."""
    if ctor.origin != "synthesized" or "NoneType" not in str(error):
        return None
    named = set(re.findall(r"\w+", _traceback_lines(error)))
    return _fill_none_defaults(
        ctor,
        cls,
        lambda name: (
            name in named
            and (mapping_use(cls, name) is not None or bool(parameter_usage(cls, name)[1]))
        ),
        lambda value: isinstance(value, Mapping),
    )


_NONE_ATTRIBUTE = re.compile(r"'NoneType' object has no attribute '(\w+)'")


def fill_none_read(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: an attribute read of a ``None``-defaulted parameter (``args: GRLConfig = None``
    then ``args.euclidean_dist``) gives each such parameter that a line of the traceback reads
    that attribute of a value of its annotation or use (:meth:`Synth.parameter`) that has it."""
    found = _NONE_ATTRIBUTE.search(str(error)) if isinstance(error, AttributeError) else None
    if ctor.origin != "synthesized" or found is None:
        return None
    attribute = found.group(1)
    lines = _traceback_lines(error)
    return _fill_none_defaults(
        ctor,
        cls,
        lambda name: re.search(rf"\b{re.escape(name)}\.{attribute}\b", lines) is not None,
        lambda value: value is not None and hasattr(value, attribute),
    )


def _fill_none_defaults(
    ctor: Ctor, cls: type, wanted: Callable[[str], bool], accepted: Callable[[object], bool]
) -> Ctor | None:
    """``ctor`` with a value (:meth:`Synth.parameter`) for each ``None``-defaulted parameter
    it does not give that is ``wanted``, where the value is ``accepted``; ``None`` if none."""
    synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
    added: dict[str, object] = {}
    for name, (param, hint) in _declared(cls).items():
        if param.default is not None or name in ctor.kwargs or not wanted(name):
            continue
        value = synth.parameter(cls, name, hint)
        if accepted(value):
            added[name] = value
    if not added:
        return None
    placeholders = [*ctor.placeholders, *synth.placeholders]
    return Ctor(
        "synthesized", ctor.args, {**ctor.kwargs, **added}, placeholders, ctor.profile, ctor.inputs
    )


def _traceback_lines(error: BaseException) -> str:
    """The source lines of ``error``'s traceback, joined."""
    return " ".join(f.line or "" for f in traceback.extract_tb(error.__traceback__))


def _declared(cls: type) -> dict[str, tuple[inspect.Parameter, object]]:
    """The constructor parameters of ``cls`` with their annotations; where it takes
    ``**kwargs``, also those of its bases' constructors that it does not name (first
    declaration wins)."""
    found: dict[str, tuple[inspect.Parameter, object]] = {}
    sig, owner = init_signature(cls)
    inits = [(sig, owner)]
    if sig is not None and any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        inits += [
            (signature_of(vars(b)["__init__"]), vars(b)["__init__"])
            for b in cls.__mro__[1:4]
            if "__init__" in vars(b) and b.__module__.split(".")[0] not in {"torch", "builtins"}
        ]
    for each, func in inits:
        hints = type_hints(each, func)
        for name, param in each.parameters.items() if each is not None else ():
            if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                found.setdefault(name, (param, hints.get(name, param.annotation)))
    return found


_RESIDUAL = re.compile(
    r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
    r" at non-singleton dimension 1"
)
_IN_NAMES = re.compile(r"^(in|inp|input)(_|planes|chs|channels|features|dim)|_in$|^dim$")


def match_residual(ctor: Ctor, messages: list[str]) -> Ctor | None:
    """Repair: a residual add of ``a`` and ``b`` channels sets the input width to the output's.

    ``Bottleneck(inplanes, planes)`` expands ``planes`` by 4, so the identity shortcut only fits
    when ``inplanes`` equals the expanded width: the input-named argument takes the other size.
    """
    if ctor.origin != "synthesized":
        return None
    for message in messages:
        m = _RESIDUAL.search(message)
        if m is None:
            continue
        a, b = int(m.group(1)), int(m.group(2))
        for name, value in ctor.kwargs.items():
            if isinstance(value, bool) or not isinstance(value, int) or value not in (a, b):
                continue
            if _IN_NAMES.search(name.lower()):
                other = b if value == a else a
                return ctor.with_kwargs({name: other})
    return None


_FIXED_WIDTH = re.compile(r"expecting embedding dimension of (\d+), but got (\d+)")
"""An attention layer built with a literal width met the block's own (smaller) width."""


def fixed_width(ctor: Ctor, messages: list[str]) -> Ctor | None:
    """Repair: a layer the block builds with a literal width (``MultiheadAttention(
    embed_dim=256)`` beside ``LayerNorm(d_model)``) wants ``w`` where the block's width is
    ``v``: every synthesized integer argument equal to ``v`` takes ``w`` (tokens that pass
    the attention layer then pass the block's own layers too)."""
    if ctor.origin != "synthesized":
        return None
    for message in messages:
        m = _FIXED_WIDTH.search(message)
        if m is None:
            continue
        want, got = int(m.group(1)), int(m.group(2))
        changes = {
            name: want
            for name, value in ctor.kwargs.items()
            if isinstance(value, int) and not isinstance(value, bool) and value == got
        }
        if changes and want <= 4096:
            return ctor.with_kwargs(changes)
    return None


_VIEW = re.compile(r"shape '\[([\d, ]+)\]' is invalid for input of size (\d+)")


def viewed_width(ctor: Ctor, cls: type, messages: list[str]) -> Ctor | None:
    """Repair: forward views a tensor as ``(..., a)`` but its last dimension is ``b``, the
    value of a constructor argument (given or its default: ``ec=128`` beside ``c2=32``, the
    block splits ``c2`` into heads): every such argument takes ``a``."""
    if ctor.origin != "synthesized":
        return None
    sig = signature_of(cls)
    defaults = {
        n: p.default for n, p in (sig.parameters.items() if sig else ()) if n not in ctor.kwargs
    }
    for message in messages:
        m = _VIEW.search(message)
        if m is None:
            continue
        target, size = [int(v) for v in m.group(1).split(",")], int(m.group(2))
        rows = math.prod(target[:-1])
        if not rows or size % rows or size // rows == target[-1]:
            continue
        have, want = size // rows, target[-1]
        changes = {
            name: want
            for name, value in {**defaults, **ctor.kwargs}.items()
            if isinstance(value, int) and not isinstance(value, bool) and value == have
        }
        if changes:
            return ctor.with_kwargs(changes)
    return None


def lengthen(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: "tuple index out of range" doubles per-stage sequences and fills empty defaults.

    ``widths=()``/``depths=()`` defaults get four stages of the profile's width (one block
    each); synthesized two-item tuples such as ``levels`` repeat their last item up to 8.
    """
    if ctor.origin != "synthesized" or not re.search(
        r"(tuple|list) index out of range", str(error)
    ):
        return None
    return _longer(ctor, cls)


def asserted_levels(ctor: Ctor, cls: type, messages: list[str]) -> Ctor | None:
    """Repair: forward asserts a list's length against a count the block derives from its
    constructor (``assert len(x) == self.nf`` with ``self.nf = len(ch)``) and the constructor
    left a sequence at an empty default (``ch=()``): sequences as :func:`lengthen` fills them."""
    if ctor.origin != "synthesized" or not any(
        re.search(r"assert\b.*len\(\w+\)\s*==\s*self\.\w+", m) for m in messages
    ):
        return None
    sig = signature_of(cls)
    empty = [
        n
        for n, p in (sig.parameters.items() if sig else ())
        if isinstance(p.default, (tuple, list)) and not p.default and n not in ctor.kwargs
    ]
    return _longer(ctor, cls) if empty else None


def _longer(ctor: Ctor, cls: type) -> Ctor | None:
    sig = signature_of(cls)
    profile = ctor.profile or PROFILES[0]
    given = {
        **{
            n: p.default
            for n, p in (sig.parameters.items() if sig else ())
            if isinstance(p.default, (tuple, list))
        },
        **ctor.kwargs,
    }
    longer: dict[str, object] = {}
    for name, value in given.items():
        if not isinstance(value, (tuple, list)) or len(value) >= 8:
            continue
        if value and any(isinstance(v, (str, bool)) or v is None for v in value):
            continue
        if value:
            items = [*value, *[value[-1]] * len(value)][:8]
        else:
            size = int_for(name, profile)
            items = [size if isinstance(size, int) and size > 1 else profile.dim] * 4
            if re.search(r"depth|layers|blocks|repeats|levels", name.lower()):
                items = [1] * 4
        longer[name] = tuple(items) if isinstance(value, tuple) else items
    if not longer:
        return None
    return ctor.with_kwargs(longer)


_SIZE_NAMES = re.compile(
    r"feat_?size|feature_size|grid_size|img_size|image_size|input_size|resolution|window_size"
)


def fill_none_sizes(ctor: Ctor, cls: type) -> Ctor | None:
    """Repair: spatial sizes defaulting to ``None`` (``feat_size``) get a concrete side."""
    if ctor.origin != "synthesized":
        return None
    sig = signature_of(cls)
    profile = ctor.profile or PROFILES[0]
    filled = {
        name: int_for(name, profile)
        for name, param in (sig.parameters.items() if sig else ())
        if param.default is None and name not in ctor.kwargs and _SIZE_NAMES.search(name.lower())
    }
    if not filled:
        return None
    return ctor.with_kwargs(filled)


_NAMED_VALUE = re.compile(r"\b([A-Za-z_]\w*)\s*=")


def unset_conflicting(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: a ``ValueError`` naming two or more synthesized arguments with their values
    (``n_chans=32 different from chs_info=[32, 32] length``) says they disagree: keep the
    first named, give the others that have a default their default back."""
    named, defaulted = _disagreeing(ctor, cls, error)
    dropped = set(named[1:]) & defaulted
    return ctor.without(dropped) if dropped else None


_MUST_EQUAL = re.compile(
    r"\b([A-Za-z_]\w*)\s*(?:=\s*|\(\s*)(\d+)\)?[^.;]*?\b(?:must|should)\s+(?:be\s+)?"
    r"(?:equal|match)(?:\s+to)?\b([^.;]*)"
)
_QUOTED_NUMBER = re.compile(r"(?:=\s*|\(\s*)(\d+)\b")


def equal_to_named(ctor: Ctor, error: BaseException) -> Ctor | None:
    """Repair: a synthesized size a message says must equal another value it quotes
    (``num_spiking_neurons=2 must equal d_value * d_key=256``, ``embed_dims(32) ... must equal
    to feat_channels(256)``) takes that value (the last one quoted after the words)."""
    found = _MUST_EQUAL.search(str(error))
    if ctor.origin != "synthesized" or found is None:
        return None
    name, value, rest = found.group(1), int(found.group(2)), found.group(3)
    given = ctor.kwargs.get(name)
    wanted = [int(n) for n in _QUOTED_NUMBER.findall(rest)]
    if not (isinstance(given, int) and not isinstance(given, bool) and given == value and wanted):
        return None
    target = wanted[-1]
    return ctor.with_kwargs({name: target}) if 0 < target <= 4096 and target != given else None


def unset_first_conflicting(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair, the other way round: give the first argument such a message names its default
    back and keep the others (``n_times=2 different from input_window_seconds=4 * sfreq=32``:
    a window and a rate that also give the other constructor arguments what they need)."""
    named, defaulted = _disagreeing(ctor, cls, error)
    return ctor.without({named[0]}) if named and named[0] in defaulted else None


def _disagreeing(ctor: Ctor, cls: type, error: BaseException) -> tuple[list[str], set[str]]:
    """The synthesized arguments a ``ValueError`` names as ``name=value`` (two or more, in
    order of mention, else none) and those of them that have a default."""
    if ctor.origin != "synthesized" or not isinstance(error, ValueError):
        return [], set()
    named = [n for n in dict.fromkeys(_NAMED_VALUE.findall(str(error))) if n in ctor.kwargs]
    if len(named) < 2:
        return [], set()
    sig = signature_of(cls)
    params = sig.parameters if sig else {}
    defaulted = {
        n for n in named if n in params and params[n].default is not inspect.Parameter.empty
    }
    return named, defaulted


_DIVISIBLE = re.compile(
    r"\((\d+)\) must be divisible by \w+ \((\d+)\)|(\d+) is not divisible by (\d+)"
)


def scale_sizes(ctor: Ctor, error: BaseException) -> Ctor | None:
    """Repair: "channels (8) must be divisible by groups (32)" scales every width-like argument."""
    m = _DIVISIBLE.search(str(error))
    if ctor.origin != "synthesized":
        return None
    if m is not None:
        got, step = (int(g) for g in (m.group(1, 2) if m.group(1) else m.group(3, 4)))
        factor = step // math.gcd(got, step) if got else 0
    elif re.search(r"divisible|multiple of", str(error)) and not re.search(r"\d", str(error)):
        factor = 2  # no sizes in the message: double the widths (bounded below)
    elif re.search(r"negative dimension|groups must be a positive integer", str(error)):
        factor = 2  # a width split into parts left one part negative: wider, same ratios
    else:
        return None
    if not 1 < factor <= 16:
        return None
    profile = ctor.profile or PROFILES[0]
    widths = {w * k for w in (profile.dim, profile.hidden, profile.dim // 4) for k in (1, 2, 4)}
    scaled = {
        k: v * factor
        for k, v in ctor.kwargs.items()
        if isinstance(v, int)
        and not isinstance(v, bool)
        and v in widths
        and v * factor <= 8 * profile.hidden
        and int_for(k, profile) in widths
    }
    if not scaled:
        return None
    return ctor.with_kwargs(scaled)


__all__ = [
    "fill_none_layers",
    "fill_none_mappings",
    "fill_none_sizes",
    "lengthen",
    "listify",
    "match_residual",
    "name_repairs",
    "scale_sizes",
    "unset_conflicting",
    "unset_first_conflicting",
]
