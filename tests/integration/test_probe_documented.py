"""Forward inputs from what forward's docstring and an attention layer's errors say, on small
hand-made modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from nnrag.validate.probe.docshapes import documented_inputs, shape_text  # noqa: E402
from nnrag.validate.probe.inputs import forward_params, input_candidates  # noqa: E402
from nnrag.validate.probe.profiles import PROFILES  # noqa: E402
from nnrag.validate.probe.reshape import repair  # noqa: E402
from nnrag.validate.probe.runner import Runner  # noqa: E402
from nnrag.validate.probe.values import tensor_spec  # noqa: E402

pytestmark = pytest.mark.integration
P = PROFILES[0]

ASSIGNER = '''
import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, num_classes: int = 5) -> None:
        super().__init__()
        self.num_classes = num_classes

    def forward(self, scores, boxes, points, labels, mask):
        """Match predictions to targets.

        Args:
            scores (torch.Tensor): Class scores with shape (bs, num_anchors, num_classes).
            boxes (torch.Tensor): Predicted boxes with shape
                (bs, num_anchors, 4).
            points (torch.Tensor): Anchor points with shape (num_anchors, 2).
            labels (torch.Tensor): Target labels with shape (bs, num_anchors).
            mask (torch.Tensor): Valid targets, with the shape of labels.

        Returns:
            scores (torch.Tensor): with shape (bs, 3).
        """
        raise NotImplementedError


class Assigner(Base):
    def forward(self, scores, boxes, points, labels, mask):
        assert boxes.shape[-1] == 4, f"boxes expected 4, got {boxes.shape}"
        assert scores.shape[-1] == self.num_classes
        assert points.shape[0] == boxes.shape[1]
        chosen = scores.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        return (chosen * mask).sum() + boxes.sum()
'''


def run_in_child(tmp_path: Path, code: str, name: str) -> dict[str, Any]:
    """The sandbox child's probe run in this process, on ``code`` written to a file: the
    last message it sends (the block's result)."""
    path = tmp_path / f"{name.lower()}.py"
    path.write_text(code)
    sent: list[dict[str, Any]] = []
    Runner({"path": str(path), "class_name": name}, sent.append, []).run()
    return sent[-1]


def test_documented_shapes_give_the_inputs(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, ASSIGNER, "Assigner")
    assert result["failed_stage"] is None, result["message"]
    inputs = result["recipe"]["inputs"]
    # the docstring of the method it overrides: literal sizes kept, symbols shared, the
    # block's own ``num_classes``, labels as indices, the mask shaped like the labels
    assert [a["shape"] for a in inputs] == [[2, 16, 5], [2, 16, 4], [16, 2], [2, 16], [2, 16]]
    assert inputs[3]["dtype"] == "int64"
    assert inputs[4]["dtype"] == "bool"


class _Crossed(nn.Module):
    def forward(self, image: Any, tokens: Any) -> Any:
        """Args:
        image (Tensor): Should be shape B x dim x h x w.
        tokens (Tensor): Must have shape B x N x dim.
        """
        return image, tokens


def test_crossed_shapes_and_undocumented_blocks() -> None:
    assert shape_text("of shape (bs, sum(H_i * W_i), C) here") == ["bs", "sum(H_i * W_i)", "C"]
    block = _Crossed()
    specs = documented_inputs(block, forward_params(block), P)
    assert specs["image"]["shape"] == [2, P.dim, 8, 8]
    assert specs["tokens"]["shape"] == [2, 16, P.dim]
    plain = nn.Linear(4, 4)  # no documented shapes: the candidates as before
    assert documented_inputs(plain, forward_params(plain), P) == {}
    first = next(iter(input_candidates(block, P, {})))
    assert [a["shape"] for a in first[0]] == [[2, P.dim, 8, 8], [2, 16, P.dim]]


def test_attention_layer_wants_batched_tokens_of_its_width() -> None:
    message = (
        "AssertionError: query should be unbatched 2D or batched 3D tensor but received "
        "4-D query tensor"
    )
    fixed = repair(message, [tensor_spec([2, 16, 8, 8]), tensor_spec([2, 16, 8, 8])], P)
    assert fixed is not None
    assert [a["shape"] for a in fixed] == [[2, 64, 16], [2, 64, 16]]
    width = "AssertionError: was expecting embedding dimension of 256, but got 16"
    fixed = repair(width, [tensor_spec([2, 64, 16])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 64, 256]


def test_maps_resized_and_joined_become_a_pyramid() -> None:
    message = (
        "RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 16 "
        "but got size 32 for tensor number 1 in the list."
    )
    maps = [tensor_spec([2, 8, 16, 16]), tensor_spec([2, 4, 16, 16]), tensor_spec([2, 4, 16, 16])]
    fixed = repair(message, [maps, tensor_spec([2, 3, 16, 16])], P)
    assert fixed is not None
    assert [a["shape"] for a in fixed[0]] == [[2, 8, 16, 16], [2, 4, 8, 8], [2, 4, 4, 4]]
    assert fixed[1]["shape"] == [2, 3, 16, 16]  # not a map of the list
    added = (
        "RuntimeError: The size of tensor a (16) must match the size of tensor b (32) at "
        "non-singleton dimension 3"
    )
    fixed = repair(added, [maps], P)
    assert fixed is not None
    assert [a["shape"][-1] for a in fixed[0]] == [16, 8, 4]


class _Thresholded(nn.Module):
    def forward(self, x: Any, conf: float) -> Any:
        return x[x > conf]


def test_a_float_argument_of_forward_is_a_number() -> None:
    args, _ = next(iter(input_candidates(_Thresholded(), P, {})))
    assert isinstance(args[1], float)


class _Similarity(nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (w @ x.flatten(2)).sum()


def test_an_argument_annotated_tensor_is_a_tensor_whatever_its_name() -> None:
    args, _ = next(iter(input_candidates(_Similarity(), P, {})))
    assert isinstance(args[1], dict)  # ``w``: not a width
    assert "shape" in args[1]


def test_a_target_compared_with_the_prediction_takes_its_shape() -> None:
    pred, target = tensor_spec([2, 8, 4, 4]), tensor_spec([2, 8], "int64", 10)
    for message in (
        "ValueError: Target size (torch.Size([2, 8])) must be the same as input size "
        "(torch.Size([2, 8, 4, 4]))",
        "AssertionError: the size of predict and target must be equal.",
    ):
        fixed = repair(message, [pred, target], P)
        assert fixed is not None
        assert fixed[1] == {"shape": [2, 8, 4, 4], "dtype": "float32"}


class _Pyramid(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]  # documented, not annotated
        """Args:
        x (list[torch.Tensor]): Feature maps, highest resolution first.
        """
        return x[0].sum() + x[1].sum()


def test_the_documented_type_stands_in_for_a_missing_annotation() -> None:
    params = forward_params(_Pyramid())
    assert params[0].annotation == "list[torch.Tensor]"
    args, _ = next(iter(input_candidates(_Pyramid(), P, {})))
    assert isinstance(args[0], list)


class _Integral(nn.Module):
    def __init__(self, bins: int = 16) -> None:
        super().__init__()
        self.bins = bins

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Decode distributions of shape (B, 4 * bins, A) into distances (B, 4, A)."""
        b, _, a = x.shape
        return x.view(b, 4, self.bins, a).softmax(2).sum(2)


def test_one_argument_takes_the_shape_its_summary_gives() -> None:
    block = _Integral()
    specs = documented_inputs(block, forward_params(block), P)
    assert specs == {"x": {"shape": [2, 64, 16], "dtype": "float32"}}


class _Guided(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Conv2d(8, 8, 1)
        self.gl = nn.Linear(12, 8)

    def forward(self, x: torch.Tensor, guide: torch.Tensor) -> torch.Tensor:
        bs = x.shape[0]
        guide = self.gl(guide)
        guide = guide.view(bs, guide.shape[1], 8)
        return self.proj(x).flatten(2).transpose(1, 2) @ guide.transpose(1, 2)


def test_an_argument_takes_the_shape_of_the_first_layer_it_meets() -> None:
    args, _ = next(iter(input_candidates(_Guided(), P, {})))
    assert args[0]["shape"][1] == 8  # the first one: as before
    assert args[1]["shape"] == [2, P.seq, 12]  # tokens of the Linear's 12 features
    plain = nn.Sequential(nn.Conv2d(3, 8, 1))  # nothing after the first: no such candidate
    args, _ = next(iter(input_candidates(plain, P, {})))
    assert [a["shape"] for a in args] == [[2, 3, P.img, P.img]]


LEVELS = """
import torch
from torch import nn


class Levels(nn.Module):
    def __init__(self, levels: int = 3):
        super().__init__()
        self.levels = levels
        self.proj = nn.Conv2d(8, 8, 1)

    def forward(self, feats: list[torch.Tensor], text: torch.Tensor):
        assert len(feats) == self.levels
        return sum(self.proj(f).mean() for f in feats) + text.mean()
"""


def test_a_list_takes_the_length_forward_asserts(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, LEVELS, "Levels")
    assert result["failed_stage"] is None, result["message"]
    assert len(result["recipe"]["inputs"][0]) == 3  # the block's own ``levels``


SCORING = """
import torch
from torch import nn


class Scoring(nn.Module):
    def __init__(self, d_model: int = 8):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, hs, prompt, prompt_mask, memory=None):
        assert hs.dim() == 4 and prompt.dim() == 3 and prompt_mask.dim() == 2
        assert memory is not None
        assert memory.size(0) == 1, "one memory for the batch"
        scores = self.proj(hs).flatten(1, 2) @ prompt.transpose(1, 2)
        return scores.sum() + prompt_mask.sum() + memory.sum()
"""


def test_ranks_and_values_a_failing_assert_names(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, SCORING, "Scoring")
    assert result["failed_stage"] is None, result["message"]
    recipe = result["recipe"]
    assert [len(a["shape"]) for a in recipe["inputs"][:3]] == [4, 3, 2]
    assert len(recipe["inputs"]) == 4  # ``memory`` given: the assertion names it
    assert recipe["inputs"][3]["shape"][0] == 1


DICE = """
import torch
from torch import nn


class Dice(nn.Module):
    def forward(self, pred, target):
        assert pred.size() == target.size(), "shapes differ"
        return (pred.sigmoid() * target).sum(dim=(2, 3)).mean()
"""


def test_a_tensor_asserted_to_have_anothers_shape_takes_it(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, DICE, "Dice")
    assert result["failed_stage"] is None, result["message"]
    pred, target = result["recipe"]["inputs"]
    assert target["shape"] == pred["shape"]
