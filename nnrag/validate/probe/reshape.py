"""Sandbox child: new forward inputs from the shape error a candidate raised (repair)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from nnrag.validate.probe.graph import graph_repair, is_graph_spec
from nnrag.validate.probe.profiles import Profile
from nnrag.validate.probe.rules import NO_MATCH, Rules
from nnrag.validate.probe.values import tensor_spec

SHAPE_WORDS = re.compile(
    r"shape|size|dimension|channels|mat1|unpack|expected .*input|rank|must match|index"
    r"|out of range|divisible",
    re.I,
)


def repair(message: str, args: list[Any], profile: Profile) -> list[Any] | None:
    """A new input list derived from a shape error message, or ``None``."""
    if is_graph_spec(args):
        return graph_repair(message, args)
    if args and isinstance(args[0], list) and args[0] and isinstance(args[0][0], dict):
        return _list_repair(message, args, profile)
    if re.search(r"number of (feature|level|map|input|tensor|image)|feature maps", message):
        shorter = [a[:1] if isinstance(a, list) and len(a) > 1 else a for a in args]
        if shorter != args:  # one item per configured level
            return shorter
    if not args or not isinstance(args[0], dict) or "shape" not in args[0]:
        return None
    spec = dict(args[0])
    shape = list(spec["shape"])
    labels = args[1] if len(args) > 1 else None
    if _FLOAT_TARGETS.search(message):
        return float_targets(args)
    if _BINARY_TARGETS.search(message):
        return binary_targets(args)
    if spec.get("dtype") == "int64" and "index out of range in self" in message:
        return embedding_rows(args)  # forward indexes embeddings: (h, r, t) entity ids
    if (
        isinstance(labels, dict)
        and labels.get("dtype") == "int64"
        and len(labels.get("shape", ())) == len(shape) == 2
        and re.search(r"index|target|type Long", message, re.I)
    ):  # class-index targets of a loss: one per sample, below the number of classes
        return [spec, tensor_spec([shape[0]], "int64", shape[1]), *args[2:]]
    found = SHAPE_RULES.first(message, _Tried(args, spec, shape, profile))
    if isinstance(found, _Args):
        return found.args
    new = found if isinstance(found, list) else None
    if new is None or new == shape or any(v <= 0 for v in new) or math.prod(new) > 50_000_000:
        return None
    spec["shape"] = new
    rest = [
        dict(a, shape=list(new)) if isinstance(a, dict) and a.get("shape") == shape else a
        for a in args[1:]
    ]
    return [spec, *rest]


def embedding_rows(args: list[Any]) -> list[Any] | None:
    """The inputs after an embedding looked up a row it lacks (``index out of range in
    self``): every integer input indexes rows 0 and 1 only, which any table has."""
    fixed = [
        dict(a, high=2)
        if isinstance(a, dict) and a.get("dtype") == "int64" and a.get("high", 0) > 2
        else a
        for a in args
    ]
    return fixed if fixed != args else None


def repair_with_keywords(
    message: str, args: list[Any], kwargs: dict[str, Any], profile: Profile
) -> tuple[list[Any], dict[str, Any]] | None:
    """The shape repair with the tensors passed by keyword as inputs after the positional
    ones (``metric(preds, target=...)``: the target is the tensor a same-shape check
    compares); ``None`` when there is no such tensor or the repair has no answer."""
    names = [name for name, value in kwargs.items() if _is_tensor_spec(value)]
    if not args or not names:
        return None
    fixed = repair(message, [*args, *(kwargs[name] for name in names)], profile)
    if fixed is None or len(fixed) != len(args) + len(names):
        return None
    given = dict(zip(names, fixed[len(args) :], strict=True))
    return fixed[: len(args)], {**kwargs, **given}


_FLOAT_TARGETS = re.compile(
    r"float(ing)?[- ]point targets|Found dtype Long but expected Float"
    r"|expected scalar type Float but found Long"
    r"|dtype must be either a floating point or complex dtype\. Got: Long"
)
"""A loss wants probabilities (or one-hot rows) where integer targets were given."""


_BINARY_TARGETS = re.compile(
    r"expected only the following values \[0, 1\]|targets? (must|should) be (binary|0 or 1)", re.I
)
"""A metric or a loss checks that its targets are 0/1 labels."""


def float_targets(args: list[Any]) -> list[Any] | None:
    """The inputs with every integer tensor after the first as floats of the same shape."""
    changed = [
        {k: v for k, v in a.items() if k != "high"} | {"dtype": "float32"}
        if isinstance(a, dict) and a.get("dtype") == "int64"
        else a
        for a in args[1:]
    ]
    return None if changed == args[1:] else [args[0], *changed]


def zero_one(spec: dict[str, Any], dtype: str = "int64") -> dict[str, Any]:
    """A tensor spec of ``spec``'s shape holding 0/1 values of ``dtype`` (labels of two
    classes, the fewest any task has)."""
    return {"shape": list(spec["shape"]), "dtype": dtype, "high": 2}


def binary_targets(args: list[Any], dtype: str = "int64") -> list[Any] | None:
    """The inputs with every float tensor after the first as 0/1 values of ``dtype``
    (multi-hot targets, where a loss's ``log(1 - p)`` or ``pow(1 - pt, gamma)`` of any other
    value is not finite; floats for a loss on logits); ``None`` when there is none."""
    changed = [
        zero_one(a, dtype)
        if isinstance(a, dict) and a.get("dtype") == "float32" and "shape" in a
        else a
        for a in args[1:]
    ]
    return None if changed == args[1:] else [args[0], *changed]


def positive_inputs(
    args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs with every float tensor drawn positive (a block that takes the log or the
    square root of a scale, ``torch.log(sigma)``, is not finite on negative values); ``None``
    when there is none."""

    def positive(value: Any) -> Any:
        if isinstance(value, list):
            return [positive(v) for v in value]
        if _is_tensor_spec(value) and value["dtype"] == "float32" and "high" not in value:
            return dict(value, positive=True)
        return value

    new = [positive(a) for a in args], {k: positive(v) for k, v in kwargs.items()}
    return None if new == (args, kwargs) else new


def zero_thresholds(
    args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs with every float number at 0.0 (a confidence threshold: the block masks
    what falls below it with ``-inf``, and 0 keeps everything); ``None`` when there is none
    other than 0."""

    def zero(value: Any) -> Any:
        return 0.0 if isinstance(value, float) and value else value

    new = [zero(a) for a in args], {k: zero(v) for k, v in kwargs.items()}
    return None if new == (args, kwargs) else new


def _list_repair(message: str, args: list[Any], profile: Profile) -> list[Any] | None:
    """A list of tensors first: its first tensor where a tensor was wanted (an annotation
    said ``Tuple[Tensor, ...]``), or join it (channels), or repair every item like the first."""
    if _LIST_NOT_TENSOR.search(message):
        return [args[0][0], *args[1:]]
    levels = pyramid(message, args[0])
    if levels is not None:
        return [levels, *args[1:]]
    want, got = _channel_numbers(message)
    joined = several_channels(message, args[0], want, got, onward=True) if want else None
    if joined is not None:  # the list was concatenated, or one item met a layer
        return [joined, *args[1:]]
    fixed = repair(message, [args[0][0]], profile)
    if fixed is None or not isinstance(fixed[0], dict):
        return None
    return [
        [dict(item, **{k: fixed[0][k] for k in ("shape", "dtype")}) for item in args[0]],
        *args[1:],
    ]


_RESIZED = re.compile(
    r"Sizes of tensors must match except in dimension 1\. Expected size (\d+) but got size (\d+)"
    r"|size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
    r" at non-singleton dimension [23]\b"
)
"""A map resized by a factor met the one before it: joined (``torch.cat``) or added."""


def pyramid(message: str, items: list[Any]) -> list[Any] | None:
    """A list of equal feature maps that forward resized by a factor and then joined with
    or added to the one before (an FPN, highest resolution first): the maps as a pyramid,
    side ``s / factor ** i`` for map ``i``."""
    m = _RESIZED.search(message)
    if m is None or not all(_is_image_spec(a) for a in items) or len(items) < 2:
        return None
    sizes = [int(g) for g in m.groups() if g is not None]
    small, large = min(sizes), max(sizes)
    side = items[0]["shape"][-1]
    if side != small or small == large or {a["shape"][-1] for a in items} != {side}:
        return None
    sides = [side * small**i // large**i for i in range(len(items))]
    if any(s < 1 for s in sides):
        return None
    return [dict(a, shape=[*a["shape"][:-2], s, s]) for a, s in zip(items, sides, strict=True)]


_LIST_NOT_TENSOR = re.compile(
    r"got \(list\b|must be Tensor, not list|'list' object has no attribute '(shape|size|dim|view"
    r"|reshape|flatten|permute|transpose|dtype|device|unsqueeze)'"
)
"""A list reached code that wanted one tensor."""


@dataclass(frozen=True, slots=True)
class _Args:
    """A rule's answer that is a whole new input list (not just the first input's shape)."""

    args: list[Any]


@dataclass(frozen=True, slots=True)
class _Tried:
    """What a shape rule sees: the inputs tried, the first one's spec (a rule may change it)
    and shape, and the size profile."""

    args: list[Any]
    spec: dict[str, Any]
    shape: list[int]
    profile: Profile


SHAPE_RULES: Rules[_Tried] = Rules()
"""Shape-error rules, in the order the messages are recognized. A rule answers a new shape
for the first input (and the inputs shaped like it), a whole new input list (``_Args``),
``None`` (its kind, no fix) or ``NO_MATCH``."""
_rule = SHAPE_RULES.rule


@_rule(r"to have (\d+) channels, but got (\d+) channels")
def _channels(m: re.Match[str], t: _Tried) -> object:
    want, got = int(m.group(1)), int(m.group(2))
    several = several_channels(m.string, t.args, want, got)
    if several is not None:
        return _Args(several)
    shape = t.shape
    seen = re.search(r"expected input\[([\d, ]+)\]", m.string)
    layer_saw = [int(v) for v in seen.group(1).split(",")] if seen else []
    if len(shape) == 4 and layer_saw != shape and sorted(layer_saw) == sorted(shape):
        return [shape[0], shape[2], shape[3], want]  # the block permutes NHWC to NCHW itself
    new = [shape[0], want, *shape[2:]] if len(shape) > 1 else None
    ratio = got // shape[1] if len(shape) == 4 and shape[1] and got % shape[1] == 0 else 1
    if new is not None and ratio > 1 and want % ratio == 0:  # space-to-depth multiplied C
        new[1] = want // ratio
    return new


@_rule(
    r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)"
    r"|same reduction dim, but got \[(\d+), (\d+)\] X \[(\d+), (\d+)\]"  # meta's words
)
def _matmul(m: re.Match[str], t: _Tried) -> object:
    want = int(m.group(3) or m.group(7))
    return [*t.shape[:-1], want] if t.shape[-1] != want else None


@_rule(r"must be equal to input_size\. Expected (\d+), got (\d+)")
def _input_size(m: re.Match[str], t: _Tried) -> object:
    return [*t.shape[:-1], int(m.group(1))] if t.shape[-1] == int(m.group(2)) else None


@_rule(r"expected last dimension of `?\w+`? (?:is|to be|==) (\d+), (?:but )?got (\d+)")
def _last_dimension(m: re.Match[str], t: _Tried) -> object:
    """``expected last dimension of emissions is 5, got 32``: that size last."""
    want, got = int(m.group(1)), int(m.group(2))
    return [*t.shape[:-1], want] if t.shape and t.shape[-1] == got else None


@_rule(r"must be stereo\W+(\d+) channel")
def _stereo(m: re.Match[str], t: _Tried) -> object:
    """``Input must be stereo: 256 channel(s)``: the dimension of that size becomes 2 (the
    channels of a batch of signals)."""
    got = int(m.group(1))
    dims = [i for i, size in enumerate(t.shape) if size == got and i > 0]
    return [*t.shape[: dims[0]], 2, *t.shape[dims[0] + 1 :]] if dims else None


@_rule(r"expected input with shape \[\*, ([\d, ]+)\]")
def _expected_tail(m: re.Match[str], t: _Tried) -> object:
    shape = t.shape
    tail = [int(v) for v in m.group(1).split(",")]
    if len(shape) == 4 and tail == [shape[1]]:  # a channels-last norm: B C H W -> B H W C
        return [shape[0], shape[2], shape[3], shape[1]]
    return [shape[0], *shape[1 : max(1, len(shape) - len(tail))], *tail]


@_rule(r"shape '\[([-\d, ]+)\]' is invalid for input of size (\d+)")
def _view(m: re.Match[str], t: _Tried) -> object:
    return view_mismatch(t.shape, [int(v) for v in m.group(1).split(",")], int(m.group(2)))


@_rule(
    r"unflatten: Provided sizes \[([\d, ]+)\] don't multiply up to the size of dim (\d+) \((\d+)\)"
)
def _unflatten(m: re.Match[str], t: _Tried) -> object:
    """``x.unflatten(2, (1, self.n_times))`` of an input whose dimension 2 has another size:
    that dimension of the input (when it has the size the message quotes) becomes the
    product of the sizes."""
    sizes = [int(v) for v in m.group(1).split(",")]
    dim, got = int(m.group(2)), int(m.group(3))
    if dim >= len(t.shape) or t.shape[dim] != got:
        return NO_MATCH
    return [*t.shape[:dim], math.prod(sizes), *t.shape[dim + 1 :]]


@_rule(r"unbatched (\d)D or batched (\d)D \w+ but received (\d)-D")
def _batched_rank(m: re.Match[str], t: _Tried) -> object:
    """``query should be unbatched 2D or batched 3D tensor but received 4-D``: an attention
    layer's tokens, ``(B, C, H, W)`` as ``(B, H*W, C)``."""
    if int(m.group(3)) != len(t.shape):
        return NO_MATCH
    return reshape_rank(t.shape, int(m.group(2)), t.profile)


@_rule(r"expecting embedding dimension of (\d+), but got (\d+)")
def _embedding_dim(m: re.Match[str], t: _Tried) -> object:
    """An attention layer's width: the tokens' last dimension."""
    want, got = int(m.group(1)), int(m.group(2))
    return [*t.shape[:-1], want] if t.shape[-1] == got else NO_MATCH


@_rule(
    r"Target size \(.*\) must be the same as input size"
    r"|(size|shape)s? of \w+ and \w+ (must|should) (be equal|match)"
    r"|(must|should|expected to) (be|have) the same (size|shape)"
    r"|same number of spatial dimensions, but got input with spatial dimensions of \[\]"
)
def _same_shape(m: re.Match[str], t: _Tried) -> object:
    """A loss that compares its prediction with a target of the same shape (or resizes the
    target to the prediction's size, ``F.interpolate(target, pred.shape[-2:])``, and the
    target had no spatial dimensions): every other tensor of another shape as a float
    tensor shaped like the first."""
    same = [
        tensor_spec(list(t.shape)) if _is_tensor_spec(a) and a["shape"] != t.shape else a
        for a in t.args[1:]
    ]
    return _Args([t.spec, *same]) if same != t.args[1:] else NO_MATCH


@_rule(r"^AssertionError")
def _assertion(m: re.Match[str], t: _Tried) -> object:
    if not (len(t.args) > 1 and isinstance(t.args[1], dict)):
        return NO_MATCH
    return class_token(t.shape, t.args[1])


@_rule(r"\d+D \(unbatched\) or (\d+)D \(batched\)")
def _unbatched(m: re.Match[str], t: _Tried) -> object:
    return reshape_rank(t.shape, int(m.group(1)), t.profile)


@_rule(
    r"[Ee]xpected (\d)D|[Ee]xpected (\d)-dimensional|[Ee]xpected (\d) dim"
    r"|should be (\d)[ -]?dimensional|must be (\d)[ -]?(?:D\b|dim)"
    r"|must have (?:a )?dimension of (\d)\b|must have (\d) dimensions\b"
    r"|is not equal to len\(dims\) = (\d)"  # ``x.permute(0, 2, 3, 4, 1)`` of a 4-D input
)
def _rank(m: re.Match[str], t: _Tried) -> object:
    return reshape_rank(t.shape, int(next(g for g in m.groups() if g)), t.profile)


@_rule(
    r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
    r" at non-singleton dimension (\d+)"
)
def _broadcast(m: re.Match[str], t: _Tried) -> object:
    shape = t.shape
    a, b, dim = (int(g) for g in m.groups())
    if not (dim < len(shape) and shape[dim] in (a, b)):
        return token_count(shape, a, b)
    new = list(shape)
    new[dim] = b if shape[dim] == a else a
    if dim == 1 and sum(_is_image_spec(x) and x["shape"] == shape for x in t.args) > 1:
        t.spec["shape"] = new  # channels of the first image only (h beside x)
        return _Args([t.spec, *t.args[1:]])
    return new


@_rule(r"doesn't match model \((\d+)")
def _model_size(m: re.Match[str], t: _Tried) -> object:
    want = int(m.group(1))
    return [*t.shape[:-2], want, want] if len(t.shape) == 4 else None


@_rule(r"divisible by (\d+)")
def _divisible(m: re.Match[str], t: _Tried) -> object:
    shape, step = t.shape, int(m.group(1))
    if not (len(shape) == 4 and 1 < step <= 64):
        return None
    side = -(-shape[-1] // step) * step
    side = side if side != shape[-1] else side * 2
    return [*shape[:-2], side, side]


@_rule(r"in range of \[-(\d+), (\d+)\], but got (-?\d+)")
def _dim_range(m: re.Match[str], t: _Tried) -> object:
    got = int(m.group(3))
    return reshape_rank(t.shape, got + 1 if got >= 0 else -got, t.profile)


@_rule(r"permitted channel values are \[([\d, ]+)\], but found (\d+)")
def _permitted(m: re.Match[str], t: _Tried) -> object:
    shape = t.shape
    allowed = [int(v) for v in m.group(1).split(",")]
    if len(shape) >= 3 and shape[-3] == int(m.group(2)):
        return [*shape[:-3], allowed[-1], *shape[-2:]]
    return None


@_rule(r"only supports? (\d+(?:(?:, | or |, or )\d+)*) channels \(got (\d+)\)")
def _supported_channels(m: re.Match[str], t: _Tried) -> object:
    """``only support 3 or 8 channels (got 16)``: the channel dimension (the one after the
    batch) takes the first supported count."""
    shape = t.shape
    allowed = [int(v) for v in re.findall(r"\d+", m.group(1))]
    if len(shape) >= 3 and shape[1] == int(m.group(2)) and allowed:
        return [shape[0], allowed[0], *shape[2:]]
    return None


@_rule(r"not enough values to unpack \(expected (\d+), got (\d+)\)")
def _unpack_short(m: re.Match[str], t: _Tried) -> object:
    if int(m.group(2)) == len(t.shape):
        return reshape_rank(t.shape, int(m.group(1)), t.profile)
    if int(m.group(1)) == len(t.shape) == int(m.group(2)) + 1:  # forward iterated the tensor
        return _Args([[t.spec, dict(t.spec)], *t.args[1:]])
    return None


@_rule(r"too many values to unpack \(expected (\d+)\)")
def _unpack_long(m: re.Match[str], t: _Tried) -> object:
    rank = int(m.group(1))
    return reshape_rank(t.shape, rank, t.profile) if len(t.shape) > rank else None


@_rule(
    r"Kernel size can't be greater|Output size is too small|smaller than|too small"
    r"|Padding size should be less|[Ss]ignal length shorter than"
)
def _too_small(m: re.Match[str], t: _Tried) -> object:
    """Maps too small for the block's kernels or pooling: each side 4 times as long; a batch
    of signals ``(batch, samples)`` too short for a transform's window (``n_fft // 2``
    reflect padding): 16 times as many samples, up to 2**18."""
    if len(t.shape) >= 3 and t.shape[-1] < 224:
        return [*t.shape[:-2], *(s * 4 for s in t.shape[-2:])]
    if len(t.shape) == 2 and t.shape[-1] * 16 <= 2**18:
        return [t.shape[0], t.shape[-1] * 16]
    return None


@_rule(
    r"Long, Int|scalar type Long|expected scalar type Long"
    r"|Expected tensor for argument #1 'indices'"
)
def _indices(m: re.Match[str], t: _Tried) -> object:
    """Integer indices wanted: the first input; once it is one, the float inputs shaped like
    it (``forward(h, r, t)``: every argument indexes a table)."""
    if t.spec.get("dtype") != "int64":
        t.spec.update(dtype="int64", high=10)
        return _Args([t.spec, *t.args[1:]])
    rest = [
        {"shape": list(a["shape"]), "dtype": "int64", "high": 2}
        if isinstance(a, dict) and a.get("dtype") == "float32" and a.get("shape") == t.shape
        else a
        for a in t.args[1:]
    ]
    return _Args([t.spec, *rest]) if rest != t.args[1:] else None


@_rule(r"\binput\b[^()]*?\bshape\b[^()]*?\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*\)")
def _named_dimensions(m: re.Match[str], t: _Tried) -> object:
    """``Only support input with shape = (batch, len)``, ``make sure your input is in the
    shape of (batch, freq_bins, timesteps)``: the rank is the number of dimensions named
    (the first shape the message names)."""
    return reshape_rank(t.shape, len(m.group(1).split(",")), t.profile)


def token_count(shape: list[int], got: int, want: int) -> list[int] | None:
    """Fix a token-count mismatch (``got`` tokens where a fixed-size table wants ``want``).

    Tokens ``(B, N, C)`` with ``N == got`` get ``N = want``; images ``(B, C, H, W)`` whose
    grid (or a downsampled grid) holds ``got`` tokens get a side scaled to ``want`` tokens.
    """
    if got == want or got <= 1 or want <= 1:
        return None
    if len(shape) == 3 and shape[1] == got:
        return [shape[0], want, shape[2]]
    if len(shape) == 3 and shape[1] + 1 == got:  # the block prepended a class token
        return [shape[0], want - 1, shape[2]] if want - 1 <= 65536 else None
    root_got, root_want = math.isqrt(got), math.isqrt(want)
    if len(shape) != 4 or root_got**2 != got or root_want**2 != want:
        return None
    side = shape[-1] * root_want
    if side % root_got:
        return None
    return [*shape[:-2], side // root_got, side // root_got]


def several_channels(
    message: str, args: list[Any], want: int, got: int, *, onward: bool = False
) -> list[Any] | None:
    """Channel repair for several image inputs: the one the layer saw, or their concatenation.

    Only that input changes (``flow`` and ``corr`` of a motion encoder need different
    channels), and with ``onward`` (the maps of one list, one level each) the ones after it
    shaped like it too (not met yet: equal levels take one repair, unequal ones one each);
    when the layer saw all of them concatenated, their channels add up to ``want``.
    """
    images = [i for i, a in enumerate(args) if _is_image_spec(a)]
    if len(images) < 2:
        return None
    channels = [args[i]["shape"][1] for i in images]
    fixed = list(args)
    if got == sum(channels) and got not in channels:
        if len(set(channels)) == 1 and want % len(images) == 0:
            new = [want // len(images)] * len(images)
        elif want - sum(channels[:-1]) > 0:
            new = [*channels[:-1], want - sum(channels[:-1])]
        else:
            return None
        for i, c in zip(images, new, strict=True):
            fixed[i] = dict(args[i], shape=[args[i]["shape"][0], c, *args[i]["shape"][2:]])
        return fixed
    m = re.search(r"expected input\[([\d, ]+)\]", message)
    seen = [int(v) for v in m.group(1).split(",")] if m else []
    matching = [i for i in images if args[i]["shape"] == seen]
    if not matching or len(matching) == len(images) == 1:
        return None
    for i in matching if onward else matching[:1]:
        fixed[i] = dict(args[i], shape=[seen[0], want, *seen[2:]])
    return fixed


def _channel_numbers(message: str) -> tuple[int, int]:
    m = re.search(r"to have (\d+) channels, but got (\d+) channels", message)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


NAMED_RANK = re.compile(
    r"\b([A-Za-z_]\w*)`? (?:must|should) be (?:a |an )?(\d)[- ]?(?:D|d|dim|dimensional)\b"
    r"|[Ee]xpected `?([A-Za-z_]\w*)`? to be (?:a |an )?(\d)[- ]?(?:D|d|dim|dimensional)\b"
)
"""A message that names an input and the rank it wants (``labels must be a 1D tensor``)."""


def named_rank(
    message: str, names: list[str], args: list[Any], kwargs: dict[str, Any], profile: Profile
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs with the one a message names (a forward parameter of ``names`` after the
    first, given positionally or by keyword; the first is :func:`repair`'s) re-shaped to the
    rank it wants: integer ones keep their leading dimensions (``labels`` of shape
    ``(batch,)``), others follow :func:`reshape_rank`."""
    found = NAMED_RANK.search(message)
    if found is None:
        return None
    name, rank = (found.group(1), found.group(2)) if found.group(1) else found.group(3, 4)
    spec = _named_input(name, names, args, kwargs)
    if spec is None:
        return None
    shape, want = list(spec["shape"]), int(rank)
    integer = str(spec["dtype"]).startswith(("int", "uint", "bool"))
    new = shape[:want] if integer and 0 < want < len(shape) else reshape_rank(shape, want, profile)
    if not new or new == shape:
        return None
    return _with_named(name, names, args, kwargs, dict(spec, shape=new))


NAMED_INTEGER = re.compile(
    r"[Ee]xpected (?:argument )?`?([A-Za-z_]\w*)`? to be an? (?:int|long|integer)\b"
    r"|\b([A-Za-z_]\w*)`? (?:must|should) be an? (?:int|long|integer)\b"
)
"""A message that names an input that must hold integers (``Expected argument `target` to
be an int or long tensor``)."""


def named_integer(
    message: str, names: list[str], args: list[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]] | None:
    """The inputs with the float one a message names (as :func:`named_rank` finds it) as 0/1
    integer labels of the same shape: two classes are the fewest any task has."""
    found = NAMED_INTEGER.search(message)
    if found is None:
        return None
    name = found.group(1) or found.group(2)
    spec = _named_input(name, names, args, kwargs)
    if spec is None or not str(spec["dtype"]).startswith("float"):
        return None
    return _with_named(name, names, args, kwargs, zero_one(spec))


def _named_input(
    name: str, names: list[str], args: list[Any], kwargs: dict[str, Any]
) -> dict[str, Any] | None:
    """The tensor spec of forward parameter ``name`` (not the first) as given, or ``None``."""
    position = names.index(name) if name in names else -1
    if 0 < position < len(args):
        spec = args[position]
    elif position != 0 and name in kwargs:
        spec = kwargs[name]
    else:
        return None
    return spec if _is_tensor_spec(spec) else None


def _with_named(
    name: str, names: list[str], args: list[Any], kwargs: dict[str, Any], spec: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """The inputs with forward parameter ``name`` given ``spec`` where it was given."""
    position = names.index(name) if name in names else -1
    if 0 < position < len(args):
        return [*args[:position], spec, *args[position + 1 :]], kwargs
    return args, {**kwargs, name: spec}


def _is_tensor_spec(value: Any) -> bool:
    return isinstance(value, dict) and "shape" in value and "dtype" in value


def _is_image_spec(value: Any) -> bool:
    return isinstance(value, dict) and len(value.get("shape", ())) == 4


def view_mismatch(shape: list[int], target: list[int], size: int) -> list[int] | None:
    """A new input shape from a failed ``view``/``reshape`` to ``target`` of ``size`` elements.

    Windows: ``(B, h, k, w, k, C)`` fixes the side to a multiple of the window ``k``.
    A class token: the view wants one token more than the ``(B, N, C)`` input has, or the
    block dropped one token (``size`` is the input less one token).
    """
    numel = math.prod(shape)
    if (
        len(shape) == 4
        and len(target) > 4
        and target[0] == shape[0]
        and target[-2:] == shape[-2:]
        and -1 not in target
    ):  # channels split into blocks (depth-to-space): C must be their product
        channels = math.prod(max(1, t) for t in target[1:-2])
        return [shape[0], channels, *shape[2:]] if channels != shape[1] else None
    if len(shape) == 3 and shape[0] == target[0]:
        batch, tokens, width = shape
        dropped = size == numel - batch * width and math.prod(target) == numel
        if target[1] == tokens + 1 or dropped:
            return [batch, tokens + 1, width]
    if size != numel or len(shape) not in (3, 4):
        return None
    for j in range(2, len(target) - 2):
        k = target[j]
        if k >= 2 and target[j + 2] == k:
            h, w = max(1, target[j - 1]) * k, max(1, target[j + 1]) * k
            if len(shape) == 3:
                return [shape[0], h * w, shape[2]]
            if target[-1] == shape[-1] and target[-1] != shape[1]:  # channels last
                return [shape[0], h, w, shape[3]]
            return [shape[0], shape[1], h, w]
    return None


def class_token(shape: list[int], size: dict[str, Any]) -> list[int] | None:
    """Tokens ``(B, H*W, C)`` beside a ``(H, W)`` size that failed an assertion: add one."""
    hw = size.get("__tuple__")
    if (
        len(shape) == 3
        and isinstance(hw, list)
        and len(hw) == 2
        and all(isinstance(v, int) for v in hw)
        and shape[1] == hw[0] * hw[1]
    ):
        return [shape[0], shape[1] + 1, shape[2]]
    return None


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
    if len(shape) == 4 and rank == 3:  # B C H W -> B (H W) C
        return [shape[0], shape[2] * shape[3], shape[1]]
    if len(shape) == 3 and rank == 4 and math.isqrt(shape[1]) ** 2 == shape[1] > 1:
        return [shape[0], shape[2], math.isqrt(shape[1]), math.isqrt(shape[1])]
    return {
        1: [channels],
        2: [2, channels],
        3: [2, profile.seq, channels],
        4: [2, channels, side, side],
        5: [2, channels, 4, side, side],
    }.get(rank)
