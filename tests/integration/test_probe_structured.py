"""Module arguments of a matching kind on hand-made modules: a backbone whose output forward
reads as a dict, callables kept to apply in forward, containers and factories of placeholder
layers made real, and ranges between synthesized bounds; every recipe replays."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from nnrag.recipes import recipe_to_dict
from nnrag.validate.replay import differences
from nnrag.validate.sandbox import Sandbox
from tests.probing import check_block as check

pytestmark = pytest.mark.integration

BLOCKS = """
from typing import Callable, Dict, List, Optional, Sequence

import torch
from torch import nn
import torch.nn.functional as F


class Segmenter(nn.Module):
    def __init__(self, backbone: nn.Module, classifier: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier

    def forward(self, x):
        features = self.backbone(x)
        return self.classifier(features["out"])


class TwoScaleHead(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.low = nn.Conv2d(channels, 4, 1)
        self.high = nn.Conv2d(channels, 4, 1)

    def forward(self, inputs):
        return self.low(inputs["low"]) + self.high(inputs["high"])


class TwoScale(nn.Module):
    def __init__(self, backbone: nn.Module, channels: int) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = TwoScaleHead(channels)

    def forward(self, x):
        features = self.backbone(x)
        return self.head(features)


class Chain(nn.Module):
    def __init__(self, steps: Sequence[Callable]) -> None:
        super().__init__()
        if not isinstance(steps, Sequence):
            raise TypeError("steps must be a sequence of callables")
        self.steps = steps

    def forward(self, x):
        for step in self.steps:
            x = step(x)
        return x


class PickOne(nn.Module):
    def __init__(self, steps: List[Callable]) -> None:
        super().__init__()
        self.steps = steps

    def forward(self, x):
        return self.steps[0](x)


class Columns(nn.Module):
    def __init__(self, parts: nn.ModuleList) -> None:
        super().__init__()
        self.parts = parts

    def forward(self, x):
        return torch.cat([part(x) for part in self.parts], dim=1)


class Stage(nn.Module):
    def __init__(self, width: int, depth: int, block_constructor: Callable[..., nn.Module]):
        super().__init__()
        self.blocks = nn.Sequential(
            *[block_constructor(width, width, 1, nn.BatchNorm2d) for _ in range(depth)]
        )

    def forward(self, x):
        return self.blocks(x)


class Base(nn.Module):
    def forward(self, x):
        '''Subclasses compute something.'''


class Doubling(Base):
    def forward(self, x):
        return 2 * x


class Combined(nn.Module):
    def __init__(self, parts: List[Base]) -> None:
        super().__init__()
        self.parts = nn.ModuleList(parts)

    def forward(self, x):
        return sum(part(x) for part in self.parts)


class Message(nn.Module):
    def forward(self, x, edge_index):
        '''Runs the layer (subclasses only).'''


class MaybeConv(nn.Module):
    def __init__(self, channels: int, conv: Optional[Message]) -> None:
        super().__init__()
        self.conv = conv
        self.lin = nn.Linear(channels, channels)

    def forward(self, x):
        if self.conv is not None:
            x = self.conv(x, None)
        return self.lin(x)


class View(nn.Module):
    def __init__(self, *shape):
        super().__init__()
        self.shape = shape

    def forward(self, x):
        return x.view(*self.shape)


class Getter(nn.Module):
    def __init__(self, model: nn.Module, return_layers: Dict[str, str]) -> None:
        super().__init__()
        names = [name for name, _ in model.named_children()]
        if not set(return_layers).issubset(names):
            raise ValueError("return_layers are not present in model")
        self.model = model
        self.return_layers = dict(return_layers)

    def forward(self, x):
        out = {}
        for name, child in self.model.named_children():
            x = child(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


class PoolHead(nn.Module):
    def __init__(self, features: nn.Module) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((3, 3))
        self.classifier = nn.Sequential(nn.Linear(24 * 9, 10))

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


class EdgeWeights(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, nn: Callable) -> None:
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.nn = nn

    def forward(self, x):
        weight = self.nn(x).view(-1, self.in_channels, self.out_channels)
        if weight.size(0) != x.size(0):
            raise ValueError("one matrix per row")
        return torch.matmul(x.unsqueeze(1), weight).squeeze(1)


class Gated(nn.Module):
    def __init__(self, gate_nn: nn.Module) -> None:
        super().__init__()
        self.gate_nn = gate_nn

    def forward(self, x):
        gate = torch.sigmoid(self.gate_nn(x))
        if x.dim() != 2:
            raise ValueError("x must be (nodes, features)")
        return x * gate.mean(-1, keepdim=True)


class Residual(nn.Module):
    def __init__(self, conv: Optional[nn.Module] = None, dropout: float = 0.0) -> None:
        super().__init__()
        self.conv = conv
        self.dropout = dropout

    def forward(self, x):
        return x + F.dropout(self.conv(x), p=self.dropout, training=self.training)


class Encoded(nn.Module):
    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, x):
        return self.encoder(x, x.size(0)).relu()


class Resize(nn.Module):
    def __init__(self, min_size: int, max_size: int) -> None:
        super().__init__()
        self.min_size = min_size
        self.max_size = max_size

    def forward(self, x):
        side = int(torch.randint(self.min_size, self.max_size, ()))
        return F.interpolate(x, size=[side, side])
"""


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probe_structured") / "blocks.py"
    path.write_text(textwrap.dedent(BLOCKS))
    return path


def passing_kwargs(sandbox: Sandbox, blocks: Path, name: str) -> dict[str, Any]:
    """The constructor keywords of a passing, placeholder-free, lossless recipe that replays."""
    result = check(sandbox, blocks, name)
    assert result.passed, result.message
    recipe = result.recipe
    assert recipe is not None
    assert not recipe.placeholders
    assert recipe.lossless
    replayed = check(sandbox, blocks, name, replay=recipe_to_dict(recipe))
    assert differences(result, replayed) == ()
    return dict(recipe.init_kwargs)


def called(value: Any) -> str:
    assert isinstance(value, dict), value
    return str(value["__call__"]["__ref__"])


def test_backbone_read_as_a_dict_returns_one(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Segmenter")
    assert called(kwargs["backbone"]).endswith(":Keyed")
    assert kwargs["backbone"]["args"] == [["out"]]
    assert called(kwargs["classifier"]) == "torch.nn.modules.conv:Conv2d"  # made real


def test_keys_read_by_a_layer_forward_passes_the_output_to(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "TwoScale")
    assert kwargs["backbone"]["args"] == [["low", "high"]]


def test_callables_kept_for_forward_are_instances_made_real(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Chain")
    assert [called(step) for step in kwargs["steps"]] == ["torch.nn.modules.conv:Conv2d"] * 2


def test_a_callable_forward_never_calls_is_made_at_its_first_call(
    sandbox: Sandbox, blocks: Path
) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "PickOne")
    made = [called(step) for step in kwargs["steps"]]
    assert made == ["torch.nn.modules.conv:Conv2d", "nnrag.validate.probe.stand_ins:ShapeKeeping"]


def test_module_list_of_placeholders_becomes_real_layers(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Columns")
    parts = kwargs["parts"]
    assert called(parts) == "torch.nn.modules.container:ModuleList"
    assert [called(p) for p in parts["args"][0]] == ["torch.nn.modules.conv:Conv2d"] * 2


def test_placeholder_factory_becomes_a_shape_keeping_class(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Stage")
    assert kwargs["block_constructor"] == {"__ref__": "nnrag.validate.probe.stand_ins:ShapeKeeping"}


def test_maximum_above_the_synthesized_minimum(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Resize")
    assert kwargs["max_size"] > kwargs["min_size"]


def test_abstract_items_become_a_runnable_subclass(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Combined")  # Base.forward is only a docstring
    assert [called(part) for part in kwargs["parts"]] == ["nnrag_block:Doubling"] * 2


def test_optional_base_with_nothing_runnable_is_none(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "MaybeConv")
    assert kwargs["conv"] is None


def test_star_shape_is_one_dimension_taking_everything(sandbox: Sandbox, blocks: Path) -> None:
    result = check(sandbox, blocks, "View")
    assert result.passed, result.message
    assert result.recipe is not None
    assert list(result.recipe.init_args) == [-1]


def test_model_whose_children_are_walked_is_a_sequence(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Getter")
    assert called(kwargs["model"]) == "torch.nn.modules.container:Sequential"
    assert kwargs["return_layers"]["__dict__"].keys() == {"0"}


def test_channels_from_the_linear_layer_after_an_adaptive_pool(
    sandbox: Sandbox, blocks: Path
) -> None:
    result = check(sandbox, blocks, "PoolHead")
    assert result.passed, result.message
    assert result.recipe is not None
    first = result.recipe.inputs[0]
    assert isinstance(first, dict)
    assert first["shape"][1] == 24  # 24 * 9 inputs over a 3x3 pool


def test_linear_argument_viewed_as_matrices_gets_their_size(sandbox: Sandbox, blocks: Path) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "EdgeWeights")
    size = kwargs["in_channels"] * kwargs["out_channels"]
    assert kwargs["nn"] == {
        "__call__": {"__ref__": "torch.nn.modules.linear:LazyLinear"},
        "args": [size],
    }


def test_lazy_layer_sized_by_a_failed_input_is_made_anew(sandbox: Sandbox, blocks: Path) -> None:
    # the first inputs are images: they size the lazy gate, then fail; the (N, F) input
    # that runs needs a gate sized by it
    result = check(sandbox, blocks, "Gated")
    assert result.passed, result.message
    assert result.recipe is not None
    first = result.recipe.inputs[0]
    assert isinstance(first, dict)
    assert len(first["shape"]) == 2
    assert first["shape"][-1] > 0  # the lazy gate sets no width of its own (0 until sized)
    replayed = check(sandbox, blocks, "Gated", replay=recipe_to_dict(result.recipe))
    assert differences(result, replayed) == ()


def test_optional_module_forward_calls_anyway_gets_a_real_layer(
    sandbox: Sandbox, blocks: Path
) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Residual")
    assert called(kwargs["conv"]) in {
        "torch.nn.modules.conv:Conv2d",
        "torch.nn.modules.linear:Linear",
    }


def test_module_called_with_more_than_its_input_keeps_the_first_one(
    sandbox: Sandbox, blocks: Path
) -> None:
    kwargs = passing_kwargs(sandbox, blocks, "Encoded")
    assert called(kwargs["encoder"]) == "nnrag.validate.probe.stand_ins:ShapeKeeping"
