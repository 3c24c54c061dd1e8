"""Constructor-argument rules on hand-made modules: annotations, names, source and repairs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.validate.sandbox import Sandbox
from tests.probing import check_block as check

pytestmark = pytest.mark.integration

BLOCKS = """
import enum
import numbers
import typing
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Type, Union

import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, in_chs: int, out_chs: int, stride: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, 3, stride, 1)

    def forward(self, x):
        return self.conv(x)


class Forwarding(Base):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)


class Kind(enum.Enum):
    NODE = "node"
    EDGE = "edge"


class EnumArg(nn.Module):
    def __init__(self, kind: Union[str, Kind], dim: int) -> None:
        super().__init__()
        self.kind = Kind(kind)
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class Small(nn.Module):
    expansion = 2

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim * self.expansion)

    def forward(self, x):
        return self.lin(x)


class Large(Small):
    expansion = 4


class TypeUnion(nn.Module):
    def __init__(self, block: Type[Union[Small, Large]], dim: int) -> None:
        super().__init__()
        self.body = block(dim)
        self.out = nn.Linear(dim * block.expansion, dim)

    def forward(self, x):
        return self.out(self.body(x))


class Choice(nn.Module):
    def __init__(self, mode: str, dim: int) -> None:
        super().__init__()
        assert mode in ("cat", "max"), mode
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class FlowHead(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class NamedPart(nn.Module):
    def __init__(self, *, flow_head) -> None:
        super().__init__()
        self.flow_head = flow_head

    def forward(self, x):
        return self.flow_head(x)


class TensorArgs(nn.Module):
    def __init__(self, weight_matrix: torch.Tensor, dtype: torch.dtype, degrees: numbers.Number):
        super().__init__()
        assert weight_matrix.shape[0] == weight_matrix.shape[1]
        assert isinstance(dtype, torch.dtype) and degrees < 1000
        self.lin = nn.Linear(weight_matrix.shape[0], 4)

    def forward(self, x):
        return self.lin(x)


@dataclass
class LayerCfg:
    has_bias: bool = True
    dim_in: int = -1
    dim_out: int = -1


class ConfigSizes(nn.Module):
    def __init__(self, layer_config: LayerCfg) -> None:
        super().__init__()
        self.lin = nn.Linear(layer_config.dim_in, layer_config.dim_out)

    def forward(self, x):
        return self.lin(x)


class Keys(nn.Module):
    def __init__(self, types: List[str], edges: List[Tuple[str, str, str]], dim: int) -> None:
        super().__init__()
        self.lins = nn.ModuleDict({t: nn.Linear(dim, dim) for t in types})
        assert len(self.lins) == 2 and all(e[0] in self.lins for e in edges)

    def forward(self, x):
        return sum(lin(x) for lin in self.lins.values())


class KwargsConv(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, **kwargs) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, **kwargs)

    def forward(self, x):
        return self.conv(x)


def set_attributes(owner, params):
    for key, value in params.items():
        if key != "self":
            setattr(owner, key, value)


class HeldByLocals(nn.Module):  # keeps its arguments through locals(), asserts what it kept

    def __init__(self, pool: nn.Module = None, proj: nn.Module = None) -> None:
        super().__init__()
        set_attributes(self, locals())
        assert self.proj is not None

    def forward(self, x):
        return self.proj(x)


class Mentioned(nn.Module):
    def __init__(self, dim: int, norm_layer=None, qk_norm: bool = True) -> None:
        super().__init__()
        if qk_norm and norm_layer is None:
            raise AssertionError("norm_layer must be provided if qk_norm is True")
        self.norm = norm_layer(dim)

    def forward(self, x):
        return self.norm(x)


class Options(nn.Module):
    def __init__(self, partition_type: str, dim: int) -> None:
        super().__init__()
        if partition_type not in {"grid", "window"}:  # a set: no order to read from the source
            raise ValueError("partition_type must be either 'grid' or 'window'")
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class Lengths(nn.Module):
    def __init__(self, dim: int, rates: List[float]) -> None:
        super().__init__()
        if len(rates) != 3:
            raise ValueError(f"rates must have length 3, got {rates}")
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class SetFlag(nn.Module):
    def __init__(self, dim: int, self_loops: bool = True) -> None:
        super().__init__()
        if self_loops:
            raise ValueError("self loops are not supported; set `self_loops=False`")
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class Smaller(nn.Module):
    def __init__(self, dim_out: int, dim_emb: int) -> None:
        super().__init__()
        assert dim_out < dim_emb, "(dim_out) must be smaller than the embedding (dim_emb)"
        self.lin = nn.Linear(dim_emb, dim_out)

    def forward(self, x):
        return self.lin(x)


class NoneSequence(nn.Module):
    def __init__(self, dim: int, widths: Optional[List[int]] = None) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, widths[0])

    def forward(self, x):
        return self.lin(x)


class WholeFloat(nn.Module):
    def __init__(self, dim: int, mlp_ratio: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty((dim * mlp_ratio, dim)))
        nn.init.normal_(self.weight)

    def forward(self, x):
        return x @ self.weight.t()


class Unpack(nn.Module):
    def __init__(self, cfgs: List[List[int]]) -> None:
        super().__init__()
        layers = []
        for k, c, s in cfgs:
            layers.append(nn.Linear(c, c))
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


@dataclass
class AttnCfg:
    dim_head: int = 8
    window_size: Optional[Tuple[int, int]] = None


class DefaultCfg(nn.Module):
    def __init__(self, dim: int, cfg: AttnCfg = AttnCfg()) -> None:
        super().__init__()
        self.area = cfg.window_size[0] * cfg.window_size[1]
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class Divisible(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        assert dim % 128 == 0, "dim should be divisible by head_dim"
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class WithExpansion(nn.Module):
    expansion = 2

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim * 2)

    def forward(self, x):
        return self.lin(x)


class TinyBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class KindStage(nn.Module):
    def __init__(self, dim: int, block_types: List[Type[nn.Module]]) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[kind(dim) for kind in block_types])

    def forward(self, x):
        return self.blocks(x)


class Stages(nn.Module):
    def __init__(self, layers: Tuple[int, ...], channels: Tuple[int, ...] = (4, 8, 16, 32)):
        super().__init__()
        assert len(layers) == len(channels)
        self.lin = nn.Linear(channels[0], channels[-1])

    def forward(self, x):
        return self.lin(x)


class TinyStem(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.lin = nn.LazyLinear(dim)

    def forward(self, x):
        return self.lin(x)


class WithStem(nn.Module):
    def __init__(self, stem: Callable[..., nn.Module], stages_out_channels: List[int]) -> None:
        super().__init__()
        assert min(stages_out_channels) > 1  # a width, not a per-stage count
        self.stem = stem()

    def forward(self, x):
        return self.stem(x)


class WantsInstance(nn.Module):
    def __init__(self, dim: int, summary: Callable) -> None:
        super().__init__()
        self.summary = summary
        self.parts = list(summary.children())  # an instance, not a class
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.summary(self.lin(x))


class GroupedPos(nn.Module):
    def __init__(self, in_chans: int, embed_dim: int = 768) -> None:
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, 3, 1, 1, groups=embed_dim)

    def forward(self, x):
        return self.proj(x)


class SplitWidth(nn.Module):
    def __init__(self, out_chs: int) -> None:
        super().__init__()
        first = (out_chs * 3 // 4 + 31) // 32 * 32  # rounded up to 32: the rest can go negative
        self.a = nn.Conv2d(out_chs, first, 1)
        self.b = nn.Conv2d(out_chs, out_chs - first - 16, 1)

    def forward(self, x):
        return torch.cat([self.a(x), self.b(x)], 1)


class RateList(nn.Module):
    def __init__(self, dim: int, proj_drop: float = 0.0, drop_path: float = 0.0) -> None:
        super().__init__()
        self.drop = nn.Dropout(proj_drop)
        self.rates = [drop_path[i] for i in range(2)]
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.drop(self.lin(x))


class BareAssert(nn.Module):
    def __init__(self, dim: int, ws: int = 1) -> None:
        super().__init__()
        assert ws != 1
        self.pool = nn.AvgPool1d(ws)
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class LenAssert(nn.Module):
    def __init__(self, dim: int, depth: int, rates: List[float]) -> None:
        super().__init__()
        assert len(rates) == depth, "one rate per layer"
        self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in rates])

    def forward(self, x):
        return self.layers(x)


class ScalarUnion(nn.Module):
    def __init__(self, size: Union[Sequence[int], int], norm: Union[tuple, str], dims: int = 3):
        super().__init__()
        assert isinstance(size, int) and isinstance(norm, str)  # a scalar broadcasts
        self.lin = nn.Linear(size, size)

    def forward(self, x):
        return self.lin(x)


class ValueOption(nn.Module):
    def __init__(self, norm_name: str, dim: int) -> None:
        super().__init__()
        if norm_name.upper() not in {"BATCH", "GROUP"}:
            raise ValueError(f"Unsupported option '{norm_name.upper()}', options are {{'BATCH'}}")
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class MeasuredInt(nn.Module):
    def __init__(self, sigma, dim: int) -> None:
        super().__init__()
        if len(sigma) == 2:
            self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class Disagreeing(nn.Module):
    def __init__(self, n_chans=None, chs_info=None, n_outputs=None) -> None:
        super().__init__()
        if n_chans is None and chs_info is None:
            raise ValueError("n_chans or chs_info is required")
        if n_chans is not None and chs_info is not None and n_chans != len(chs_info):
            raise ValueError(f"{n_chans=} different from {chs_info=} length")
        self.lin = nn.Linear(n_chans or len(chs_info), 4)

    def forward(self, x):
        return self.lin(x)


class WindowOrLength(nn.Module):  # a length, or a window and a rate (which it needs)
    def __init__(self, n_times=None, seconds=None, rate=None) -> None:
        super().__init__()
        if n_times is None and (seconds is None or rate is None):
            raise ValueError("give n_times, or seconds and rate")
        if None not in (n_times, seconds, rate) and n_times != seconds * rate:
            raise ValueError(f"{n_times=} different from {seconds=} * {rate=}")
        if rate is None:
            raise ValueError("rate could not be inferred: give rate, or seconds and n_times")
        self.lin = nn.Linear(int(seconds * rate), 4)

    def forward(self, x):
        return self.lin(x)


class SizesNamedLikeLayers(nn.Module):  # "fact" in factor, "norm" in normalized: sizes
    def __init__(self, normalized_shape, ffn_expansion_factor, act_layer) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        hidden = int(normalized_shape * ffn_expansion_factor)
        self.mlp = nn.Sequential(
            nn.Linear(normalized_shape, hidden), act_layer(), nn.Linear(hidden, normalized_shape)
        )

    def forward(self, x):
        return self.mlp(x * self.weight)


class ProductWidth(nn.Module):  # the width must be the product of two defaults
    def __init__(self, width: int, d_key: int = 4, d_value: int = 6) -> None:
        super().__init__()
        if width != d_key * d_value:
            raise ValueError(f"{width=} must equal d_value * d_key={d_key * d_value}")
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x)


class FusedLayer(nn.Module):  # a config read by attributes, with an index named like a layer
    def __init__(self, config, layer_num: int = 0) -> None:
        super().__init__()
        self.cross = layer_num >= config.fusion_layer
        self.lin = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x):
        return self.lin(x)


class DegreeMasked(nn.Module):  # the degrees are compared with a tensor: one of their own
    def __init__(self, in_degrees, features: int) -> None:
        super().__init__()
        width = len(in_degrees)
        out_degrees = torch.arange(width)
        self.register_buffer("mask", (out_degrees[..., None] >= in_degrees).float())
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x)


class SupportsArray(typing.Protocol):  # numpy.typing.ArrayLike's shape: structural members
    def __array__(self): ...


SizesLike = Union[SupportsArray, Sequence[int], complex]


class ChannelsLike(nn.Module):  # an array-like of widths, one per level
    def __init__(self, num_inputs: int, num_channels: SizesLike) -> None:
        super().__init__()
        widths = [num_inputs] + [int(num_channels[i]) for i in range(len(num_channels))]
        self.levels = nn.Sequential(*[nn.Linear(a, b) for a, b in zip(widths, widths[1:])])

    def forward(self, x):
        return self.levels(x)


class CountedTypes(nn.Module):  # a count of numerical types, not a list of type names
    def __init__(self, dim, num_numerical_types):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(num_numerical_types, dim))

    def forward(self, x):
        return x.unsqueeze(-1) * self.weights[0]


class Categories(nn.Module):  # one count per categorical column, checked before ``len``
    def __init__(self, categories, dim=8):
        super().__init__()
        assert all(map(lambda n: n > 0, categories)), "each category needs a value"
        self.embeds = nn.ModuleList([nn.Embedding(n, dim) for n in categories])

    def forward(self, x):
        return x + sum(e.weight.sum() for e in self.embeds)


class MaskedFlow(nn.Module):  # normflows: ``b`` is a mask over features, no annotation
    def __init__(self, b, scale):
        super().__init__()
        self.register_buffer("b", b.view(1, *b.size()))
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return x * self.b + self.scale


class Coupling(nn.Module):  # normflows: ``param_map`` is a module, no annotation
    def __init__(self, param_map, depth):
        super().__init__()
        self.add_module("param_map", param_map)
        self.depth = depth

    def forward(self, x):
        return self.param_map(x)


@dataclass
class StageSettings:
    euclidean: bool = False
    width: int = 8


class ReadsItsOptionalSettings(nn.Module):  # `settings` is None unless given: read anyway
    def __init__(self, dim: int, settings: StageSettings = None) -> None:
        super().__init__()
        self.euclidean = settings.euclidean
        self.lin = nn.Linear(dim, settings.width)

    def forward(self, x):
        return self.lin(x)


class Adapted(nn.Module):
    def __init__(self, dim: int, adapter_name: str) -> None:
        super().__init__()
        self.adapters = nn.ModuleDict({adapter_name: nn.Linear(dim, dim)})

    def forward(self, x):
        return sum(layer(x) for layer in self.adapters.values())


class TupleDepth(nn.Module):
    def __init__(self, dim: int, depth) -> None:
        super().__init__()
        assert isinstance(depth, tuple), "depth must be a tuple of per-stage depths"
        self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(sum(depth))])

    def forward(self, x):
        return self.layers(x)


SUM_MODE = "sum"
MEAN_MODE = "mean"


class ConstantChoice(nn.Module):
    def __init__(self, mode: str, dim: int) -> None:
        super().__init__()
        assert mode in {SUM_MODE, MEAN_MODE}
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class ClassOrName(nn.Module):
    def __init__(self, block: Union[Type[Small], str], dim: int) -> None:
        super().__init__()
        assert not isinstance(block, str), "a name needs a registry"
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class NeedsAttribute(nn.Module):
    def __init__(self, block: Type[nn.Module], dim: int) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim * block.expansion)

    def forward(self, x):
        return self.lin(x)
"""


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probe_args") / "blocks.py"
    path.write_text(textwrap.dedent(BLOCKS))
    return path


def kwargs_of(sandbox: Sandbox, blocks: Path, name: str) -> dict[str, object]:
    result = check(sandbox, blocks, name)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.origin == "synthesized"
    return dict(result.recipe.init_kwargs)


def test_forwarding_init_takes_the_base_signature(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "Forwarding")
    assert set(kwargs) == {"in_chs", "out_chs", "stride"}


def test_union_with_str_prefers_the_enum(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "EnumArg")
    assert kwargs["kind"] == {"__ref__": "nnrag_block:Kind.NODE"}  # the member, replayable


def test_type_of_union_is_its_first_class(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "TypeUnion")
    assert kwargs["block"] == {"__ref__": "nnrag_block:Small"}


def test_string_argument_from_a_comparison_in_the_source(sandbox: Sandbox, blocks: Path) -> None:
    assert kwargs_of(sandbox, blocks, "Choice")["mode"] == "cat"


def test_module_argument_built_from_the_class_it_names(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "NamedPart")  # forward passes: no placeholder
    flow_head = kwargs["flow_head"]
    assert isinstance(flow_head, dict)
    assert flow_head["__call__"] == {"__ref__": "nnrag_block:FlowHead"}  # its constructor call


def test_class_arguments_of_a_kind_come_from_the_file(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "KindStage")  # forward passes: no placeholder
    assert kwargs["block_types"] == [{"__ref__": "nnrag_block:TinyBlock"}] * 2


def test_per_stage_lengths_follow_the_defaulted_ones(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "Stages")
    assert kwargs["layers"] == {"__tuple__": [1, 1, 1, 1]}


def test_module_factory_of_a_kind_comes_from_the_file(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "WithStem")  # forward passes: no placeholder
    assert kwargs["stem"] == {"__ref__": "nnrag_block:TinyStem"}


def test_placeholder_class_made_an_instance_becomes_a_real_layer(
    sandbox: Sandbox, blocks: Path
) -> None:
    # the instance made of the placeholder class is still a placeholder; forward ran with it,
    # so it becomes a real layer of the shape it saw (never a pass on the placeholder)
    result = check(sandbox, blocks, "WantsInstance")
    assert result.passed, result.message
    assert result.recipe is not None
    assert not result.recipe.placeholders
    summary = result.recipe.init_kwargs["summary"]
    assert isinstance(summary, dict)
    assert summary["__call__"] == {"__ref__": "torch.nn.modules.linear:Linear"}


def test_only_the_indexed_rate_becomes_a_list(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "RateList")
    assert kwargs["drop_path"] == [0.0, 0.0]
    assert "proj_drop" not in kwargs


def test_tensor_dtype_and_number_annotations(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "TensorArgs")
    matrix = kwargs["weight_matrix"]
    assert isinstance(matrix, dict)
    assert matrix["__call__"] == {"__ref__": "torch:eye"}  # a square matrix, by its expression


def test_config_sizes_of_minus_one_are_set(sandbox: Sandbox, blocks: Path) -> None:
    result = check(sandbox, blocks, "ConfigSizes")
    assert result.passed, result.message


def test_string_keys_are_distinct(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "Keys")
    assert kwargs["types"] == ["a", "b"]


@pytest.mark.parametrize(
    ("name", "key", "expected"),
    [
        ("KwargsConv", "kernel_size", 3),  # "missing 1 required positional argument"
        ("Options", "partition_type", "grid"),  # options listed by the message
        ("SetFlag", "self_loops", False),  # "set `self_loops=False`"
        ("Divisible", "dim", 128),  # "divisible" without sizes doubles the widths
        ("GroupedPos", "embed_dim", 32),  # a defaulted width set to the synthesized one
        ("SplitWidth", "out_chs", 128),  # "negative dimension": wider until every part fits
        ("BareAssert", "ws", 2),  # `assert ws != 1` read from the failing line
        # the first class of the file with an ``expansion`` attribute replaces the placeholder
        ("NeedsAttribute", "block", {"__ref__": "nnrag_block:Small"}),
    ],
)
def test_repairs_that_read_names(
    sandbox: Sandbox, blocks: Path, name: str, key: str, expected: object
) -> None:
    assert kwargs_of(sandbox, blocks, name)[key] == expected


@pytest.mark.parametrize(
    "name",
    [
        "LenAssert",
        "Mentioned",
        "Lengths",
        "Smaller",
        "NoneSequence",
        "WholeFloat",
        "Unpack",
        "DefaultCfg",
    ],
)
def test_repairs_from_the_message(sandbox: Sandbox, blocks: Path, name: str) -> None:
    kwargs = kwargs_of(sandbox, blocks, name)
    if name == "LenAssert":
        depth = kwargs["depth"]
        assert isinstance(depth, int)
        assert kwargs["rates"] == [0.0] * depth
    if name == "Lengths":
        assert isinstance(kwargs["rates"], list)
        assert len(kwargs["rates"]) == 3
    if name == "Smaller":
        assert isinstance(kwargs["dim_out"], int)
        assert isinstance(kwargs["dim_emb"], int)
        assert kwargs["dim_out"] < kwargs["dim_emb"]
    if name == "WholeFloat":
        assert isinstance(kwargs["mlp_ratio"], int)
    if name == "Unpack":
        cfgs = kwargs["cfgs"]
        assert isinstance(cfgs, list)
        assert all(isinstance(item, list) and len(item) == 3 for item in cfgs)


def test_union_of_sequence_and_scalar_takes_the_scalar(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "ScalarUnion")
    assert isinstance(kwargs["size"], int)
    assert isinstance(kwargs["norm"], str)


def test_option_message_quoting_the_value_sets_an_option(sandbox: Sandbox, blocks: Path) -> None:
    assert kwargs_of(sandbox, blocks, "ValueOption")["norm_name"] == "BATCH"


def test_int_the_failing_line_measures_becomes_a_list(sandbox: Sandbox, blocks: Path) -> None:
    sigma = kwargs_of(sandbox, blocks, "MeasuredInt")["sigma"]
    assert isinstance(sigma, list)
    assert len(sigma) == 2


def test_arguments_a_message_says_disagree_keep_the_first_only(
    sandbox: Sandbox, blocks: Path
) -> None:
    kwargs = kwargs_of(sandbox, blocks, "Disagreeing")
    assert "n_chans" in kwargs
    assert "chs_info" not in kwargs


def test_a_name_argument_is_a_usable_key(sandbox: Sandbox, blocks: Path) -> None:
    assert kwargs_of(sandbox, blocks, "Adapted")["adapter_name"] == "default"


def test_isinstance_tuple_assert_makes_a_pair(sandbox: Sandbox, blocks: Path) -> None:
    depth = kwargs_of(sandbox, blocks, "TupleDepth")["depth"]
    assert isinstance(depth, dict)
    assert len(depth["__tuple__"]) == 2


def test_string_argument_from_a_module_constant_it_is_compared_with(
    sandbox: Sandbox, blocks: Path
) -> None:
    assert kwargs_of(sandbox, blocks, "ConstantChoice")["mode"] in {"sum", "mean"}


def test_union_of_class_and_str_keeps_the_class(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "ClassOrName")
    assert kwargs["block"] == {"__ref__": "nnrag_block:Small"}


def test_an_assert_on_what_self_kept_fills_the_parameter_of_that_name(
    sandbox: Sandbox, blocks: Path
) -> None:
    kwargs = kwargs_of(sandbox, blocks, "HeldByLocals")
    assert kwargs.get("proj") is not None
    assert "pool" not in kwargs


def test_arguments_a_message_says_disagree_keep_the_others_when_the_first_is_not_enough(
    sandbox: Sandbox, blocks: Path
) -> None:
    kwargs = kwargs_of(sandbox, blocks, "WindowOrLength")
    assert "n_times" not in kwargs
    assert {"seconds", "rate"} <= set(kwargs)


def test_a_size_whose_name_holds_a_layer_word_inside_another_word_is_a_number(
    sandbox: Sandbox, blocks: Path
) -> None:
    kwargs = kwargs_of(sandbox, blocks, "SizesNamedLikeLayers")
    assert isinstance(kwargs["normalized_shape"], int)
    assert isinstance(kwargs["ffn_expansion_factor"], int)
    assert kwargs["act_layer"] == {"__ref__": "torch.nn.modules.activation:ReLU"}


def test_an_attribute_read_of_a_none_default_fills_that_parameter(
    sandbox: Sandbox, blocks: Path
) -> None:
    kwargs = kwargs_of(sandbox, blocks, "ReadsItsOptionalSettings")
    assert kwargs["settings"] == {"__call__": {"__ref__": "nnrag_block:StageSettings"}, "args": []}


def test_a_union_with_structural_members_is_synthesized_by_name(
    sandbox: Sandbox, blocks: Path
) -> None:
    """``num_channels: ArrayLike`` (numpy's union of protocols and scalars): a list of widths,
    as the name and the code's ``len`` say, not a stand-in for the first protocol."""
    kwargs = kwargs_of(sandbox, blocks, "ChannelsLike")
    channels = kwargs["num_channels"]
    assert isinstance(channels, list)
    assert all(isinstance(c, int) for c in channels)


def test_a_count_named_like_a_list_of_types_is_an_integer(sandbox: Sandbox, blocks: Path) -> None:
    """``num_numerical_types``: a count (``torch.randn(num_numerical_types, dim)``), not the
    list of type names ``node_types`` would be."""
    assert isinstance(kwargs_of(sandbox, blocks, "CountedTypes")["num_numerical_types"], int)


def test_an_integer_the_failing_line_iterates_becomes_a_list(
    sandbox: Sandbox, blocks: Path
) -> None:
    """``all(map(lambda n: n > 0, categories))`` with ``categories=2``: 'int' object is not
    iterable on a line that names it, without ``len``: it becomes a list of counts."""
    categories = kwargs_of(sandbox, blocks, "Categories")["categories"]
    assert isinstance(categories, list)
    assert all(isinstance(c, int) for c in categories)


def test_a_number_used_as_a_tensor_or_a_module_becomes_one(sandbox: Sandbox, blocks: Path) -> None:
    """``b.view(...)`` of a synthesized ``b=2`` (``'int' object has no attribute 'view'``):
    a vector of the profile's width; ``add_module("param_map", 2)`` (``int is not a Module
    subclass``): a placeholder module. Only the parameter the failing line names changes."""
    masked = kwargs_of(sandbox, blocks, "MaskedFlow")
    assert masked["b"]["__call__"] == {"__ref__": "torch:tensor"}
    assert isinstance(masked["scale"], (int, float))
    coupling = kwargs_of(sandbox, blocks, "Coupling")
    assert isinstance(coupling["param_map"], dict)
    assert isinstance(coupling["depth"], int)


def test_a_list_a_tensor_operation_met_becomes_a_tensor(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = kwargs_of(sandbox, blocks, "DegreeMasked")
    degrees = kwargs["in_degrees"]
    assert isinstance(degrees, dict)
    assert degrees["__call__"] == {"__ref__": "torch:tensor"}


def test_a_size_a_message_says_must_equal_a_quoted_value_takes_it(
    sandbox: Sandbox, blocks: Path
) -> None:
    assert kwargs_of(sandbox, blocks, "ProductWidth")["width"] == 24


def test_a_config_field_named_like_a_layer_is_a_number(sandbox: Sandbox, blocks: Path) -> None:
    config = kwargs_of(sandbox, blocks, "FusedLayer")["config"]
    assert isinstance(config, dict)
    assert isinstance(config["kwargs"]["fusion_layer"], int)


def test_a_list_file_path_without_a_writable_folder_stays_unknown(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tempfile

    from nnrag.validate.probe import values
    from nnrag.validate.probe.args import Synth
    from nnrag.validate.probe.profiles import PROFILES

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    written = Synth(None, PROFILES[0]).string_for("dict_file")
    assert Path(written).read_text().splitlines()[:3] == ["0", "1", "2"]

    def unwritable(name: str, lines: list[str]) -> str:
        raise PermissionError(f"cannot write {name}")

    monkeypatch.setattr(values, "text_file", unwritable)
    assert Synth(None, PROFILES[0]).string_for("dict_file") == ""
