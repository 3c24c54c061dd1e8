"""One primary category per block: from its name, bases, module, the layers it builds, its calls."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from nnrag.index.build import Index
    from nnrag.model import BlockRef, ModuleInfo

BlockCategory = Literal[
    "attention",
    "convolution",
    "transformer block",
    "pooling",
    "normalization",
    "activation",
    "loss",
    "embedding",
    "head",
    "network architecture",
    "graph layer",
    "utility",
]
BLOCK_CATEGORIES: tuple[BlockCategory, ...] = get_args(BlockCategory)

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_identifier(name: str) -> tuple[str, ...]:
    """Lower-case words of an identifier, split on case changes, digits and underscores.

    ``"SSDLiteHead"`` -> ``("ssd", "lite", "head")``;
    ``"Conv2dSame"`` -> ``("conv", "2", "d", "same")``.
    """
    return tuple(word.lower() for word in _WORDS.findall(name))


def _significant(words: Iterable[str]) -> tuple[str, ...]:
    """Words that carry meaning for classification: alphabetic, two letters or more."""
    return tuple(word for word in words if len(word) > 1 and word.isalpha())


# --------------------------------------------------------------------------- features


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassFeatures:
    """What the rules look at for one class (call names as their last dotted part)."""

    name: str
    module: str = ""
    bases: tuple[str, ...] = ()
    docstring: str = ""
    methods: tuple[str, ...] = ()
    init_params: tuple[str, ...] = ()
    forward_params: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    """Callables called in ``__init__`` and the class body (``Conv2d``, ``create_conv2d``)."""
    calls: tuple[str, ...] = ()
    """Callables called in the other methods (``softmax``, ``propagate``)."""
    self_attrs: tuple[str, ...] = ()
    """``self.<name>`` attributes read or written anywhere in the class."""
    matmul: bool = False
    """The class uses the ``@`` operator or ``matmul``/``bmm``."""


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _scan(root: ast.AST, calls: list[str], attrs: list[str]) -> bool:
    """Collect call names and ``self.<attr>`` names under ``root`` (one pass); any ``@``?"""
    matmul = False
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            name = _call_name(node.func)
            if name is not None:
                calls.append(name)
                if name == "partial" and node.args:
                    inner = _call_name(node.args[0])
                    if inner:
                        calls.append(inner)
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                attrs.append(node.attr)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            matmul = True
        stack.extend(ast.iter_child_nodes(node))
    return matmul


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if args.vararg:
        every.append(args.vararg)
    if args.kwarg:
        every.append(args.kwarg)
    return tuple(arg.arg for arg in every if arg.arg not in ("self", "cls"))


def class_features(node: ast.ClassDef, *, module: str = "") -> ClassFeatures:
    """Features of one parsed class definition."""
    functions = {
        child.name: child
        for child in node.body
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    init = functions.get("__init__")
    forward = functions.get("forward")
    layers: list[str] = []
    calls: list[str] = []
    attrs: list[str] = []
    matmul = False
    for child in node.body:
        builds = child is init or not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
        matmul = _scan(child, layers if builds else calls, attrs) or matmul
    matmul = matmul or any(name in ("matmul", "bmm", "baddbmm") for name in calls)
    return ClassFeatures(
        name=node.name,
        module=module,
        bases=tuple(ast.unparse(base) for base in node.bases),
        docstring=ast.get_docstring(node) or "",
        methods=tuple(functions),
        init_params=_params(init) if init else (),
        forward_params=_params(forward) if forward else (),
        layers=tuple(layers),
        calls=tuple(calls),
        self_attrs=tuple(dict.fromkeys(attrs)),
        matmul=matmul,
    )


def features_from_source(
    text: str, *, name: str, module: str = "", start_line: int = 0, end_line: int = 0
) -> ClassFeatures | None:
    """Features of the top-level class ``name`` in ``text`` (only lines start..end are parsed)."""
    if start_line and end_line:
        text = "\n".join(text.splitlines()[start_line - 1 : end_line])
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return class_features(node, module=module)
    return None


# --------------------------------------------------------------------------- rules

_C = BlockCategory

# Words of the class name: (category, weight). The last word (the head noun of an English
# compound such as ``ChannelAttn``) counts double, the first one and a half.
_NAME_WORDS: Mapping[str, tuple[_C, float]] = {
    **dict.fromkeys(
        ("attention", "attn", "cbam", "eca", "mhsa", "msa", "gpsa", "qkv", "selfattn"),
        ("attention", 3.0),
    ),
    "se": ("attention", 2.0),
    "modulation": ("attention", 1.0),
    **dict.fromkeys(("transformer", "former"), ("transformer block", 2.0)),
    "vit": ("transformer block", 1.5),
    **dict.fromkeys(
        ("conv", "convolution", "convs", "mbconv", "inverted", "separable", "bottleneck"),
        ("convolution", 2.0),
    ),
    **dict.fromkeys(("inception", "stem", "dw", "fire", "mixed"), ("convolution", 1.5)),
    **dict.fromkeys(("cell", "dense", "ghost"), ("convolution", 1.5)),
    **dict.fromkeys(
        ("pool", "pooling", "pooler", "aggregation", "aggregator", "aggr", "readout"),
        ("pooling", 3.0),
    ),
    **dict.fromkeys(("gem", "downsample", "lse", "avg"), ("pooling", 1.5)),
    **dict.fromkeys(
        ("norm", "normalization", "batchnorm", "layernorm", "groupnorm", "rmsnorm", "whitening"),
        ("normalization", 3.0),
    ),
    "bn": ("normalization", 0.5),
    **dict.fromkeys(
        (
            "relu",
            "gelu",
            "swish",
            "mish",
            "sigmoid",
            "tanh",
            "silu",
            "elu",
            "selu",
            "celu",
            "softplus",
            "prelu",
            "hardswish",
            "hardsigmoid",
            "hardtanh",
            "activation",
            "softsign",
            "starrelu",
        ),
        ("activation", 3.0),
    ),
    "act": ("activation", 1.0),
    **dict.fromkeys(("loss", "criterion", "entropy", "losses"), ("loss", 4.0)),
    **dict.fromkeys(
        ("embed", "embedding", "embeddings", "rope", "rotary", "vec", "embedder"),
        ("embedding", 3.0),
    ),
    **dict.fromkeys(("pos", "positional", "position", "encoding"), ("embedding", 1.5)),
    **dict.fromkeys(("head", "heads", "classifier", "predictor"), ("head", 4.0)),
    "aux": ("head", 3.0),
    **dict.fromkeys(
        ("net", "model", "network", "cnn", "rcnn", "backbone", "yolo", "detr", "unet"),
        ("network architecture", 2.0),
    ),
    **dict.fromkeys(("extractor", "vgg", "gpt"), ("network architecture", 1.5)),
    **dict.fromkeys(
        ("gcn", "gat", "gin", "sage", "graph", "gnn", "mpnn", "cheb", "hetero"),
        ("graph layer", 2.0),
    ),
    **dict.fromkeys(
        (
            "mlp",
            "ffn",
            "feed",
            "dropout",
            "drop",
            "droppath",
            "identity",
            "scale",
            "sequential",
            "compose",
            "random",
            "augment",
            "explainer",
            "wrapper",
            "getter",
            "flatten",
            "permute",
            "reshape",
        ),
        ("utility", 3.0),
    ),
}

# A base class's last dotted part: (category, weight).
_BASES: Mapping[str, tuple[_C, float]] = {
    "MessagePassing": ("graph layer", 6.0),
    "Aggregation": ("pooling", 6.0),
    **dict.fromkeys(("_Loss", "_WeightedLoss"), ("loss", 6.0)),
    **dict.fromkeys(
        ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"),
        ("convolution", 5.0),
    ),
    **dict.fromkeys(
        (
            "LayerNorm",
            "BatchNorm1d",
            "BatchNorm2d",
            "BatchNorm3d",
            "GroupNorm",
            "InstanceNorm1d",
            "InstanceNorm2d",
            "InstanceNorm3d",
            "RMSNorm",
            "LocalResponseNorm",
            "SyncBatchNorm",
        ),
        ("normalization", 5.0),
    ),
    **dict.fromkeys(
        (
            "ReLU",
            "ReLU6",
            "PReLU",
            "GELU",
            "SiLU",
            "ELU",
            "SELU",
            "CELU",
            "LeakyReLU",
            "Sigmoid",
            "Tanh",
            "Hardswish",
            "Hardsigmoid",
            "Hardtanh",
            "Mish",
            "Softplus",
            "GLU",
        ),
        ("activation", 5.0),
    ),
    **dict.fromkeys(
        ("BaseTransform", "Transform", "_AutoAugmentBase", "ExplainerAlgorithm"),
        ("utility", 6.0),
    ),
    **dict.fromkeys(("Sequential", "ModuleList", "ModuleDict", "Identity"), ("utility", 2.0)),
    "MultiheadAttention": ("attention", 5.0),
    **dict.fromkeys(("Embedding", "EmbeddingBag", "KGEModel"), ("embedding", 5.0)),
    **dict.fromkeys(
        (
            "AvgPool1d",
            "AvgPool2d",
            "AvgPool3d",
            "MaxPool1d",
            "MaxPool2d",
            "MaxPool3d",
            "AdaptiveAvgPool2d",
            "AdaptiveMaxPool2d",
        ),
        ("pooling", 5.0),
    ),
}

# Words of the module path: (category, weight).
_MODULE_WORDS: Mapping[str, tuple[_C, float]] = {
    **dict.fromkeys(("loss", "losses", "criterion"), ("loss", 3.0)),
    **dict.fromkeys(("activations", "activation"), ("activation", 3.0)),
    **dict.fromkeys(("norm", "normalization"), ("normalization", 1.0)),
    **dict.fromkeys(("pool", "poolers", "pooling", "aggr"), ("pooling", 2.0)),
    "attention": ("attention", 1.0),
    **dict.fromkeys(("transforms", "explain", "augment"), ("utility", 4.0)),
    "kge": ("embedding", 2.0),
    **dict.fromkeys(("embed", "embedding", "embeddings"), ("embedding", 1.5)),
    "features": ("utility", 2.0),
}

# A last name word that makes the class a part of a network, not a whole one (``FocalNetBlock``).
_PART_WORDS = frozenset({"block", "layer", "stage", "unit", "cell", "stem"})
_ATTENTION_LAYER = re.compile(r"attn|attention", re.IGNORECASE)
_MLP_LAYER = re.compile(r"mlp|ffn|feedforward", re.IGNORECASE)
_TRANSFORMER_LAYER = re.compile(r"transformer|encoderlayer|decoderlayer", re.IGNORECASE)
_CONV_LAYER = re.compile(r"conv", re.IGNORECASE)
_NORM_LAYER = re.compile(r"norm|^bn$|batchnorm", re.IGNORECASE)
_POOL_LAYER = re.compile(r"pool", re.IGNORECASE)
_HEAD_LAYER = re.compile(r"head|classifier", re.IGNORECASE)
_ACTIVATIONS = frozenset(
    {"relu", "gelu", "silu", "sigmoid", "tanh", "mish", "softplus", "hardswish", "hardsigmoid"}
    | {"hardtanh", "elu", "leaky_relu", "relu6", "clamp", "exp", "erf"}
)
_LOSS_CALLS = frozenset(
    {"cross_entropy", "nll_loss", "log_softmax", "binary_cross_entropy", "mse_loss", "kl_div"}
    | {"binary_cross_entropy_with_logits", "logsigmoid", "smooth_l1_loss", "l1_loss"}
)
_POOL_CALLS = frozenset(
    {"adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d", "max_pool2d", "roi_pool"}
    | {"roi_align", "ps_roi_align", "ps_roi_pool", "avg_pool1d", "max_pool1d", "lp_pool2d"}
)
_NORM_CALLS = frozenset(
    {"layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "fast_layer_norm"}
)


def _last_word(words: tuple[str, ...]) -> str | None:
    return words[-1] if words else None


def _word_scores(
    words: tuple[str, ...], table: Mapping[str, tuple[_C, float]], scale: float
) -> dict[str, float]:
    score: dict[str, float] = defaultdict(float)
    for position, word in enumerate(words):
        hit = table.get(word)
        if hit is None:
            continue
        factor = 2.0 if position == len(words) - 1 else 1.5 if position == 0 else 1.0
        score[hit[0]] += hit[1] * factor * scale
    return score


def _merge(into: dict[str, float], other: dict[str, float]) -> None:
    for key, value in other.items():
        into[key] += value


def _is_model_class(features: ClassFeatures) -> bool:
    """The class is the model a file is named after (``resnet.py`` defines ``ResNet``)."""
    parts = features.module.split(".")
    stem = parts[-1].replace("_", "").lower()
    if len(stem) < 3 or not {"models", "model"} & set(parts[:-1]):
        return False
    names = [features.name, *(base.rsplit(".", 1)[-1] for base in features.bases)]
    for name in names:
        flat = name.replace("_", "").lower().removeprefix("quantizable")
        if flat == stem or (
            len(stem) >= 3 and flat.startswith(stem) and len(flat) - len(stem) <= 2
        ):
            return True
    return False


def scores(features: ClassFeatures) -> dict[str, float]:
    """Each category's score for ``features`` (the highest one wins; utility starts at 1)."""
    score: dict[str, float] = defaultdict(float, utility=1.0)
    name_words = _significant(split_identifier(features.name))
    graph_library = features.module.startswith("torch_geometric")
    part_of_a_net = _last_word(name_words) in _PART_WORDS
    for category, value in _word_scores(name_words, _NAME_WORDS, 1.0).items():
        target = "graph layer" if graph_library and category == "convolution" else category
        if not (part_of_a_net and target == "network architecture"):
            score[target] += value
    lowered = features.name.lower()
    if "roi" in lowered:
        score["pooling"] += 3.0
    for base in features.bases:
        tail = base.rsplit(".", 1)[-1]
        hit = _BASES.get(tail)
        if hit is not None:
            score[hit[0]] += hit[1]
        elif tail.endswith("Loss"):
            score["loss"] += 5.0
        else:
            _merge(score, _word_scores(_significant(split_identifier(tail)), _NAME_WORDS, 0.6))
    module_words = _significant(
        word for part in features.module.split(".") for word in part.split("_")
    )
    for word in module_words:
        hit = _MODULE_WORDS.get(word)
        if hit is not None:
            score[hit[0]] += hit[1]
    if graph_library and ".conv" in features.module:
        score["graph layer"] += 3.0
    if _is_model_class(features):
        score["network architecture"] += 3.0
    _layer_scores(features, score, graph_library=graph_library, part_of_a_net=part_of_a_net)
    _call_scores(features, score, graph_library=graph_library)
    _attribute_scores(features, score)
    return score


def _layer_scores(
    features: ClassFeatures, score: dict[str, float], *, graph_library: bool, part_of_a_net: bool
) -> None:
    """Add the scores of the layers the class builds."""
    layers = features.layers
    attention_layers = sum(1 for layer in layers if _ATTENTION_LAYER.search(layer))
    mlp_layers = sum(1 for layer in layers if _MLP_LAYER.search(layer))
    linears = layers.count("Linear")
    norms = sum(1 for layer in layers if _NORM_LAYER.search(layer))
    convs = sum(1 for layer in layers if _CONV_LAYER.search(layer))
    if graph_library and convs:
        score["graph layer"] += 1.5 * min(convs, 2)
    else:
        score["convolution"] += min(convs, 3)
    score["attention"] += 1.5 * min(attention_layers, 1)
    if attention_layers and (mlp_layers or linears) and norms:
        score["transformer block"] += 5.0
    elif part_of_a_net and mlp_layers and norms:
        score["transformer block"] += 2.0  # MetaFormer: norm, token mixer, norm, MLP
    if any(_TRANSFORMER_LAYER.search(layer) for layer in layers):
        score["transformer block"] += 3.0
    score["normalization"] += 0.5 * min(norms, 2)
    score["pooling"] += 0.5 * min(sum(1 for layer in layers if _POOL_LAYER.search(layer)), 2)
    if any(layer in ("Embedding", "EmbeddingBag") for layer in layers):
        score["embedding"] += 2.0
    if any("Encoding" in layer or "Embed" in layer for layer in layers):
        score["embedding"] += 1.0
    if any(_HEAD_LAYER.search(layer) for layer in layers):
        score["network architecture"] += 1.5
    score["utility"] += 0.5 * min(sum(1 for layer in layers if "Dropout" in layer), 1)


def _call_scores(features: ClassFeatures, score: dict[str, float], *, graph_library: bool) -> None:
    """Add the scores of the operations the class calls."""
    layers = features.layers
    calls = set(features.calls)
    if "scaled_dot_product_attention" in calls:
        score["attention"] += 3.0
    if "softmax" in calls:
        score["attention"] += 1.5
    if features.matmul:
        score["attention"] += 1.0
    if "propagate" in calls:
        score["graph layer"] += 5.0
    if graph_library and calls & {"scatter", "spmm", "message_and_aggregate"}:
        score["graph layer"] += 1.5
    if calls & {"conv1d", "conv2d", "conv3d", "conv_transpose2d"}:
        score["convolution"] += 1.5
    if calls & _POOL_CALLS:
        score["pooling"] += 1.0
    if calls & _NORM_CALLS:
        score["normalization"] += 1.5
    if calls & _LOSS_CALLS:
        score["loss"] += 1.5
    if {"target", "targets", "label", "labels", "y_true"} & set(features.forward_params):
        score["loss"] += 3.0
    if not layers and calls & _ACTIVATIONS and len(calls) <= 6:
        score["activation"] += 1.5


def _attribute_scores(features: ClassFeatures, score: dict[str, float]) -> None:
    """Add the scores of the class's attributes, methods and constructor parameters."""
    attrs = features.self_attrs
    score["convolution"] += 0.75 * min(sum(1 for a in attrs if a.startswith("conv")), 2)
    score["attention"] += 0.75 * min(sum(1 for a in attrs if a in ("attn", "qkv", "q", "k")), 1)
    if {"forward_features", "forward_head"} <= set(features.methods):
        score["network architecture"] += 4.0
    if {"reset_classifier", "get_classifier"} & set(features.methods):
        score["network architecture"] += 2.0
    if "num_classes" in features.init_params:
        score["network architecture"] += 2.0


# Tie-break order: the more specific category first.
_PRIORITY: tuple[BlockCategory, ...] = (
    "loss",
    "activation",
    "graph layer",
    "transformer block",
    "attention",
    "normalization",
    "pooling",
    "embedding",
    "head",
    "convolution",
    "network architecture",
    "utility",
)


def categorize(features: ClassFeatures) -> BlockCategory:
    """The primary category of a class (deterministic; ties go to the more specific category)."""
    score = scores(features)
    return max(_PRIORITY, key=lambda category: (score[category], -_PRIORITY.index(category)))


def _class_unit_lines(info: ModuleInfo, name: str) -> tuple[int, int] | None:
    for unit in info.units:
        if unit.kind == "class" and any(cls.name == name for cls in unit.classes):
            return unit.start_line, unit.end_line
    return None


def block_features(index: Index, block: BlockRef) -> ClassFeatures:
    """Features of a discovered block, re-parsing only its class's lines."""
    info = index.module(block.module, prefer=block.source)
    if info is not None and info.source == block.source:
        lines = _class_unit_lines(info, block.name)
        if lines is not None:
            found = features_from_source(
                index.text(info),
                name=block.name,
                module=block.module,
                start_line=lines[0],
                end_line=lines[1],
            )
            if found is not None:
                return found
    return ClassFeatures(name=block.name, module=block.module, docstring=block.docstring or "")


def category_of(index: Index, block: BlockRef) -> BlockCategory:
    """The primary category of a discovered block (what ``nnrag list`` shows)."""
    return categorize(block_features(index, block))
