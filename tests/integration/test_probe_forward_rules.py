"""Forward inputs from shape comments, per-level sizes, asserted length chains, non-finite
retries and fixed attention widths, on small hand-made modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from nnrag.validate.probe.ctor import Ctor  # noqa: E402
from nnrag.validate.probe.docshapes import commented_shapes, documented_inputs  # noqa: E402
from nnrag.validate.probe.inputs import container, forward_params, input_candidates  # noqa: E402
from nnrag.validate.probe.profiles import PROFILES  # noqa: E402
from nnrag.validate.probe.repair import fixed_width  # noqa: E402
from nnrag.validate.probe.reshape import positive_inputs, repair  # noqa: E402
from nnrag.validate.probe.values import make_tensor, tensor_spec  # noqa: E402
from tests.integration.test_probe_documented import run_in_child  # noqa: E402

pytestmark = pytest.mark.integration
P = PROFILES[0]


class _Commented(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, hs: Any, prompt: Any, prompt_mask: Any) -> Any:
        """Score queries against a prompt."""
        # hs has shape (num_layer, bs, num_query, d_model)
        # prompt: (seq, bs, d_model)
        # prompt_mask has shape (bs, seq), where 1 is padding
        assert hs.dim() == 4
        assert prompt_mask.dim() == 2
        hs = hs.sum(0)  # hs has shape (bs, num_query, d_model): after an assignment, not read
        pooled = (prompt * (~prompt_mask).T[..., None]).sum(0)
        return self.proj(hs) @ pooled.unsqueeze(-1)


def test_shapes_a_comment_in_forward_gives_before_an_assignment() -> None:
    block = _Commented()
    texts = commented_shapes(type(block), "forward", ["hs", "prompt", "prompt_mask"])
    assert set(texts) == {"hs", "prompt", "prompt_mask"}
    specs = documented_inputs(block, forward_params(block), P)
    assert specs["hs"]["shape"] == [16, 2, 16, 8]  # d_model: the first layer's width
    assert specs["prompt"]["shape"] == [16, 2, 8]
    assert specs["prompt_mask"] == {"shape": [2, 16], "dtype": "bool"}
    args, _ = next(iter(input_candidates(block, P, {})))
    assert [a["shape"] for a in args] == [[16, 2, 16, 8], [16, 2, 8], [2, 16]]


class _Levels(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, query: Any, value: Any, value_shapes: list) -> Any:  # type: ignore[type-arg]  # as documented
        """Attend over every level.

        Args:
            query (Tensor): Queries with shape (bs, num_queries, dim).
            value (Tensor): Flattened levels with shape (bs, sum(H_i * W_i), dim).
            value_shapes (list): Level sizes [(H_0, W_0), ..., (H_{L-1}, W_{L-1})].
        """
        assert sum(h * w for h, w in value_shapes) == value.shape[1]
        return self.proj(query) @ value.transpose(1, 2)


def test_level_sizes_are_a_list_of_pairs_the_flattened_levels_add_up_to() -> None:
    block = _Levels()
    specs = documented_inputs(block, forward_params(block), P)
    assert specs["value_shapes"] == [{"__tuple__": [8, 8]}]
    assert specs["value"]["shape"] == [2, 64, 8]
    args, _ = next(iter(input_candidates(block, P, {})))
    assert args[2] == [{"__tuple__": [8, 8]}]


class _Flagged(nn.Module):
    def forward(self, x: torch.Tensor, multimask_output: bool) -> torch.Tensor:
        return x[:, 1:] if multimask_output else x[:, :1]


def test_a_bool_argument_named_like_a_mask_is_a_flag() -> None:
    args, _ = next(iter(input_candidates(_Flagged(), P, {})))
    assert args[1] is False


def test_a_tensor_or_list_annotation_takes_the_tensor() -> None:
    spec = tensor_spec([2, 16, 8])
    assert container(spec, "torch.Tensor | list[torch.Tensor]") == spec
    assert container(spec, "list[torch.Tensor] | None") == [spec, spec]


CHAINED = """
import torch
from torch import nn


class Chained(nn.Module):
    def forward(self, curr: list[torch.Tensor], pos: list[torch.Tensor]):
        assert len(curr) == len(pos) == 1
        return curr[0] + pos[0]
"""


def test_every_list_of_an_asserted_length_chain_takes_the_length(tmp_path: Path) -> None:
    result = run_in_child(tmp_path, CHAINED, "Chained")
    assert result["failed_stage"] is None, result["message"]
    assert [len(a) for a in result["recipe"]["inputs"]] == [1, 1]


SCALE = """
import torch
from torch import nn


class Scale(nn.Module):
    def forward(self, sigma, error):
        return (torch.log(sigma) + error.abs()).sum()
"""


def test_a_non_finite_output_is_tried_again_with_positive_floats(tmp_path: Path) -> None:
    spec = tensor_spec([4, 8])
    fixed = positive_inputs([spec, tensor_spec([4], "int64", 3)], {"w": spec})
    assert fixed is not None
    assert fixed[0][0]["positive"] is True
    assert "positive" not in fixed[0][1]  # integers as they were
    assert fixed[1]["w"]["positive"] is True
    assert bool((make_tensor(fixed[0][0]) > 0).all())
    assert positive_inputs([tensor_spec([2], "int64", 3)], {}) is None
    result = run_in_child(tmp_path, SCALE, "Scale")
    assert result["failed_stage"] is None, result["message"]
    assert result["recipe"]["inputs"][0]["positive"] is True


def test_an_attention_layer_of_a_literal_width_sets_the_blocks_width() -> None:
    ctor = Ctor("synthesized", (), {"d_model": 32, "dim_feedforward": 64, "pre_norm": False})
    message = "AssertionError: was expecting embedding dimension of 256, but got 32"
    fixed = fixed_width(ctor, ["other", message])
    assert fixed is not None
    assert fixed.kwargs == {"d_model": 256, "dim_feedforward": 64, "pre_norm": False}
    assert fixed_width(Ctor("harvested", (), {"d_model": 32}), [message]) is None


def test_a_target_without_spatial_dimensions_takes_the_predictions_shape() -> None:
    message = (
        "ValueError: Input and output must have the same number of spatial dimensions, but "
        "got input with spatial dimensions of [] and output size of (8, 8)."
    )
    fixed = repair(message, [tensor_spec([2, 4, 8, 8]), tensor_spec([2, 4], "int64", 4)], P)
    assert fixed is not None
    assert fixed[1] == {"shape": [2, 4, 8, 8], "dtype": "float32"}
