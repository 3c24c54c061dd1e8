"""Probing rules on small hand-made modules: real layers for placeholder modules, and more."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from nnrag.validate.probe.runner import Runner  # noqa: E402
from nnrag.validate.probe.stand_ins import shape_keeping_layer  # noqa: E402

pytestmark = pytest.mark.integration


def run(tmp_path: Path, source: str, name: str, **request: Any) -> dict[str, Any]:
    path = tmp_path / "block.py"
    path.write_text(textwrap.dedent(source))
    sent: list[dict[str, Any]] = []
    request = {"path": str(path), "class_name": name, "depth": "forward", **request}
    Runner(request, sent.append, []).run()
    result = sent[-1]
    assert result["kind"] == "result"
    return result


RESIDUAL = """
from torch import nn


class Residual(nn.Module):
    def __init__(self, main: nn.Module):
        super().__init__()
        self.main = main

    def forward(self, x):
        return x + self.main(x)
"""


def test_a_placeholder_module_becomes_a_real_layer_of_the_shape_it_saw(tmp_path: Path) -> None:
    result = run(tmp_path, RESIDUAL, "Residual")
    assert result["failed_stage"] is None, result["message"]
    recipe = result["recipe"]
    assert "placeholders" not in recipe
    main = recipe["init_kwargs"]["main"]
    assert main["__call__"] == {"__ref__": "torch.nn.modules.conv:Conv2d"}
    channels = recipe["inputs"][0]["shape"][1]
    assert main["args"] == [channels, channels, 1]
    replayed = run(tmp_path, RESIDUAL, "Residual", replay=recipe)
    assert replayed["failed_stage"] is None
    assert replayed["recipe"]["output_digest"] == recipe["output_digest"]


WANTS_ATTRIBUTES = """
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x) if isinstance(self.model, nn.Identity) else x.missing
"""


def test_a_placeholder_stays_when_the_real_layer_fails(tmp_path: Path) -> None:
    result = run(tmp_path, WANTS_ATTRIBUTES, "Wrapper")
    assert result["failed_stage"] == "forward"
    assert result["category"] == "ctor-args"
    assert result["recipe"]["placeholders"] == ["model"]
    assert result["recipe"]["init_kwargs"]["model"]["__call__"]["__ref__"].endswith("Identity")


def test_shape_keeping_layers() -> None:
    conv = shape_keeping_layer((2, 8, 5, 5))
    assert isinstance(conv, nn.Conv2d)
    assert conv(torch.zeros(2, 8, 5, 5)).shape == (2, 8, 5, 5)
    linear = shape_keeping_layer((2, 7, 12))
    assert isinstance(linear, nn.Linear)
    assert linear(torch.zeros(2, 7, 12)).shape == (2, 7, 12)
    assert shape_keeping_layer((4,)) is None


BRANCHES = """
import torch
from torch import nn


class Padded(nn.Module):
    def __init__(self, cin, cout, kernel_size=1, stride=1, padding=None):
        super().__init__()
        pad = (kernel_size - 1 + stride - 1) // 2 if padding is None else padding
        self.conv = nn.Conv2d(cin, cout, kernel_size, stride, pad)

    def forward(self, x):
        return self.conv(x)


class Reduction(nn.Module):
    def __init__(self, conv_block=Padded):
        super().__init__()
        self.branch0 = conv_block(8, 8, kernel_size=3, stride=2)
        self.branch1 = nn.MaxPool2d(3, stride=2)

    def forward(self, x):
        return torch.cat((self.branch0(x), self.branch1(x)), 1)
"""


def test_branches_of_different_sizes_get_plain_convolutions(tmp_path: Path) -> None:
    result = run(tmp_path, BRANCHES, "Reduction")
    assert result["failed_stage"] is None, result["message"]
    kwargs = result["recipe"]["init_kwargs"]
    assert kwargs["conv_block"] == {"__ref__": "torch.nn.modules.conv:Conv2d"}
    replayed = run(tmp_path, BRANCHES, "Reduction", replay=result["recipe"])
    assert replayed["failed_stage"] is None
    assert replayed["recipe"]["output_digest"] == result["recipe"]["output_digest"]


GUARDED = """
from torch import nn


class Mlp(nn.Module):
    def __init__(self, channels, hidden=None, act_layer=nn.ReLU):
        super().__init__()
        self.fc = nn.Conv2d(channels, hidden or channels, 1)
        self.act = act_layer()

    def forward(self, x):
        return self.act(self.fc(x))


class Excite(nn.Module):
    def __init__(self, channels, use_mlp=True):
        super().__init__()
        dd = {"device": None}
        self.mlp = Mlp(channels, channels, act_layer=nn.ReLU, *dd) if use_mlp else nn.Identity()

    def forward(self, x):
        return x * self.mlp(x).sigmoid()
"""


@pytest.mark.parametrize("harvest", [False, True])
def test_a_failing_line_guarded_by_an_option_tries_its_other_value(
    tmp_path: Path, harvest: bool
) -> None:
    # with harvesting, the binding error is raised in the probe's __init__ wrapper: the
    # failing line is still the block's own
    result = run(tmp_path, GUARDED, "Excite", harvest=harvest)
    assert result["failed_stage"] is None, result["message"]
    assert result["recipe"]["init_kwargs"]["use_mlp"] is False


NEEDS_PARAMETERS = """
import copy

import torch
from torch import nn


class Averaged(nn.Module):
    def __init__(self, model: nn.Module, decay: float = 0.9):
        super().__init__()
        self.module = copy.deepcopy(model)
        self.dtype = next(model.parameters()).dtype
        self.decay = decay

    def forward(self, x):
        return self.module(x.to(self.dtype))
"""


def test_a_placeholder_the_constructor_needs_parameters_of_becomes_a_real_layer(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, NEEDS_PARAMETERS, "Averaged")
    assert result["failed_stage"] is None, result["message"]
    model = result["recipe"]["init_kwargs"]["model"]
    assert model["__call__"] == {"__ref__": "torch.nn.modules.conv:Conv2d"}
    assert "placeholders" not in result["recipe"]


MULTI_LABEL = """
import torch
from torch import nn


class MultiLabel(nn.Module):
    def __init__(self, classes: int = 8):
        super().__init__()
        self.head = nn.Linear(classes, classes)

    def forward(self, x, target):
        if not target.is_floating_point():
            raise ValueError("expects dense floating-point targets shaped (batch, classes)")
        return nn.functional.binary_cross_entropy_with_logits(self.head(x), target)
"""


def test_integer_targets_become_floats_when_a_loss_wants_probabilities(tmp_path: Path) -> None:
    result = run(tmp_path, MULTI_LABEL, "MultiLabel")
    assert result["failed_stage"] is None, result["message"]
    x, target = result["recipe"]["inputs"]
    assert target["dtype"] == "float32"
    assert target["shape"] == x["shape"]


CHANNELS_FIRST = """
import torch
from torch import nn


class Dense(nn.Module):
    def __init__(self, chs, norm_layer=nn.LayerNorm):
        super().__init__()
        self.conv = nn.Conv2d(chs, 3 * chs, 3, padding=1)
        self.norm = norm_layer(3 * chs)
        self.proj = nn.Conv2d(3 * chs, chs, 1)

    def forward(self, x):
        assert x.shape[-1] == x.shape[-2], "square images"
        return self.proj(self.norm(self.conv(x)))


class Stage(nn.Sequential):
    def __init__(self, chs: int, depth: int, **kwargs):
        super().__init__(*[Dense(chs, **kwargs) for _ in range(depth)])
"""


def test_a_layer_norm_over_image_channels_becomes_a_batch_norm(tmp_path: Path) -> None:
    result = run(tmp_path, CHANNELS_FIRST, "Stage")
    assert result["failed_stage"] is None, result["message"]
    kwargs = result["recipe"]["init_kwargs"]
    assert kwargs["norm_layer"] == {"__ref__": "torch.nn.modules.batchnorm:BatchNorm2d"}
    assert len(result["recipe"]["inputs"][0]["shape"]) == 4


FOCAL = """
import torch
from torch import nn


class Focal(nn.Module):
    def __init__(self, gamma: float = 1.5):
        super().__init__()
        self.gamma = gamma

    def forward(self, x, y):
        p = torch.sigmoid(x)
        pt = p * y + (1 - p) * (1 - y)
        return (-(1 - pt).pow(self.gamma) * torch.log(pt.clamp(min=1e-8))).sum()
"""


def test_non_finite_losses_are_retried_with_binary_targets(tmp_path: Path) -> None:
    result = run(tmp_path, FOCAL, "Focal")
    assert result["failed_stage"] is None, result["message"]
    x, y = result["recipe"]["inputs"]
    assert x["dtype"] == "float32"
    assert y == {"shape": x["shape"], "dtype": "int64", "high": 2}
    replayed = run(tmp_path, FOCAL, "Focal", replay=result["recipe"])
    assert replayed["failed_stage"] is None
    assert replayed["recipe"]["output_digest"] == result["recipe"]["output_digest"]


LOGITS_FOCAL = """
import torch
from torch import nn
from torch.nn import functional as F


class LogitsFocal(nn.Module):
    def forward(self, pred, label):
        loss = F.binary_cross_entropy_with_logits(pred, label, reduction="none")
        p = pred.sigmoid()
        pt = label * p + (1 - label) * (1 - p)
        return (loss * (1.0 - pt) ** 1.5).mean()
"""


def test_a_loss_on_logits_is_retried_with_float_binary_targets(tmp_path: Path) -> None:
    result = run(tmp_path, LOGITS_FOCAL, "LogitsFocal")
    assert result["failed_stage"] is None, result["message"]
    pred, label = result["recipe"]["inputs"]
    assert label == {"shape": pred["shape"], "dtype": "float32", "high": 2}
    replayed = run(tmp_path, LOGITS_FOCAL, "LogitsFocal", replay=result["recipe"])
    assert replayed["recipe"]["output_digest"] == result["recipe"]["output_digest"]


HEADS = """
import torch
from torch import nn


class Stage(nn.Module):
    def __init__(self, in_chs: int, out_chs: int, num_heads: int = 3):
        super().__init__()
        self.proj = nn.Conv2d(in_chs, out_chs, 1)
        self.qkv = nn.Linear(out_chs, 3 * out_chs)
        self.heads = num_heads

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).unbind(2)
        return (q.softmax(-1) * k * v).flatten(2)
"""


def test_widths_become_multiples_of_a_defaulted_head_count(tmp_path: Path) -> None:
    result = run(tmp_path, HEADS, "Stage")
    assert result["failed_stage"] is None, result["message"]
    kwargs = result["recipe"]["init_kwargs"]
    assert kwargs["out_chs"] % 3 == 0
    assert kwargs["in_chs"] % 3 == 0
