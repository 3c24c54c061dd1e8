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
from nnrag.validate.probe.repair import asserted_levels, fixed_width, viewed_width  # noqa: E402
from nnrag.validate.probe.reshape import (  # noqa: E402
    named_integer,
    named_rank,
    positive_inputs,
    repair,
    repair_with_keywords,
    zero_thresholds,
)
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


PASSED_ON = '''
import torch
from torch import nn


class Matcher(nn.Module):
    """Match anchors to targets; call it with ``proto`` (b, nm, mh, mw) as well."""

    def forward(self, scores, **extra):
        return self.overlaps(scores, **extra)

    def overlaps(self, scores, proto, weight):
        return scores.sum() + proto.flatten(1).sum() + weight.sum()
'''


def test_arguments_forward_hands_on_through_kwargs_get_documented_shapes(
    tmp_path: Path,
) -> None:
    result = run_in_child(tmp_path, PASSED_ON, "Matcher")
    assert result["failed_stage"] is None, result["message"]
    extra = result["recipe"]["input_kwargs"]
    assert extra["proto"]["shape"] == [2, 16, 16, 16]  # the class docstring's (b, nm, mh, mw)
    assert "shape" in extra["weight"]  # undocumented: a tensor still


class _Tokens(nn.Module):
    def __init__(self, dim: int = 12) -> None:
        super().__init__()
        self.token = nn.Embedding(1, dim)

    def forward(self, image: Any) -> Any:
        """Args:
        image (Tensor): Embeddings with shape (B, C, H, W).
        """
        return image + self.token.weight.view(1, -1, 1, 1)


def test_a_width_after_a_table_of_embeddings_is_the_tables_width() -> None:
    block = _Tokens()
    specs = documented_inputs(block, forward_params(block), P)
    assert specs["image"]["shape"] == [2, 12, 8, 8]  # not the table's one row


VIEWED = """
import torch
from torch import nn


class Viewed(nn.Module):
    def __init__(self, c1: int, c2: int, ec: int = 24, gc: int = 12):
        super().__init__()
        self.hc = c2
        self.gl = nn.Linear(gc, ec)
        self.proj = nn.Conv2d(c1, c2, 1)

    def forward(self, x, guide):
        guide = self.gl(guide).view(x.shape[0], guide.shape[1], self.hc)
        return self.proj(x).flatten(2).transpose(1, 2) @ guide.transpose(1, 2)
"""


def test_a_view_to_the_blocks_width_sets_the_argument_that_made_the_last_dim(
    tmp_path: Path,
) -> None:
    ctor = Ctor("synthesized", (), {"c1": 8, "c2": 8})
    message = "RuntimeError: shape '[2, 16, 8]' is invalid for input of size 768"
    fixed = viewed_width(ctor, type("Plain", (), {"__init__": _init}), [message])
    assert fixed is not None
    assert fixed.kwargs == {"c1": 8, "c2": 8, "ec": 8}  # 768 / (2 * 16) = 24: ``ec``
    result = run_in_child(tmp_path, VIEWED, "Viewed")
    assert result["failed_stage"] is None, result["message"]
    x, guide = result["recipe"]["inputs"]
    assert len(x["shape"]) == 4  # the convolution it meets, not the Linear the guide meets
    assert guide["shape"][-1] == 12


def _init(self: Any, c1: int, c2: int, ec: int = 24) -> None:
    del self, c1, c2, ec


POOLED = """
import torch
from torch import nn


class Pooled(nn.Module):
    def __init__(self, ch=(), ct: int = 12):
        super().__init__()
        self.nf = len(ch)
        self.query = nn.Linear(ct, 8)
        self.projections = nn.ModuleList(nn.Conv2d(c, 8, 1) for c in ch)

    def forward(self, x: list[torch.Tensor], text: torch.Tensor):
        assert len(x) == self.nf
        maps = sum(proj(f).mean((2, 3)) for f, proj in zip(x, self.projections))
        return self.query(text) * maps
"""


def test_a_length_asserted_against_an_empty_default_fills_the_sequence(
    tmp_path: Path,
) -> None:
    message = "assert len(x) == self.nf"
    ctor = Ctor("synthesized", (), {})
    cls = type("Plain", (), {"__init__": _pooled_init})
    fixed = asserted_levels(ctor, cls, ["", message])
    assert fixed is not None
    assert len(fixed.kwargs["ch"]) == 4
    assert asserted_levels(ctor, cls, ["assert x.dim() == 4"]) is None
    result = run_in_child(tmp_path, POOLED, "Pooled")
    assert result["failed_stage"] is None, result["message"]
    maps = result["recipe"]["inputs"][0]
    assert len(maps) == len(result["recipe"]["init_kwargs"]["ch"]["__tuple__"])


def _pooled_init(self: Any, ch: tuple[int, ...] = (), ct: int = 12) -> None:
    del self, ch, ct


def test_equal_maps_of_a_list_take_a_channel_repair_together() -> None:
    maps = [tensor_spec([2, 16, 8, 8]) for _ in range(3)]
    message = (
        "RuntimeError: Given groups=1, weight of size [8, 4, 1, 1], expected input[2, 16, 8, 8]"
        " to have 4 channels, but got 16 channels instead"
    )
    fixed = repair(message, [maps], P)
    assert fixed is not None
    assert [m["shape"][1] for m in fixed[0]] == [4, 4, 4]
    uneven = [tensor_spec([2, 4, 8, 8]), tensor_spec([2, 16, 8, 8]), tensor_spec([2, 16, 8, 8])]
    fixed = repair(message, [uneven], P)
    assert fixed is not None  # the map it met and the ones after it: the first kept
    assert [m["shape"][1] for m in fixed[0]] == [4, 4, 4]


THRESHOLD = """
import torch
from torch import nn


class Threshold(nn.Module):
    def forward(self, x: torch.Tensor, conf: float) -> torch.Tensor:
        return x.masked_fill(torch.tanh(x.abs()) < conf, float("-inf"))
"""


def test_a_non_finite_output_is_tried_again_with_thresholds_at_zero(tmp_path: Path) -> None:
    assert zero_thresholds([tensor_spec([2]), 0.5], {"eps": 1e-6, "n": 3}) == (
        [tensor_spec([2]), 0.0],
        {"eps": 0.0, "n": 3},
    )
    assert zero_thresholds([tensor_spec([2]), 0.0], {}) is None
    result = run_in_child(tmp_path, THRESHOLD, "Threshold")
    assert result["failed_stage"] is None, result["message"]
    assert result["recipe"]["inputs"][1] == 0.0


def test_a_list_of_tuples_or_a_tensor_is_tuples_then_a_tensor() -> None:
    spec = tensor_spec([2, 8, 4, 4])
    made = container(spec, "list[tuple[torch.Tensor, ...] | torch.Tensor]")
    assert made == [{"__tuple__": [spec, spec]}, spec]
    assert container(spec, "list[torch.Tensor]") == [spec, spec]


class _Guided(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gl = nn.Linear(12, 8)

    def forward(self, x: torch.Tensor, guide: torch.Tensor) -> torch.Tensor:
        return x.flatten(2).mean(-1) @ self.gl(guide).transpose(1, 2)


class _Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)
        self.attn = _Guided()

    def forward(self, x: torch.Tensor, guide: torch.Tensor) -> torch.Tensor:
        return self.attn(self.conv(x), guide)


def test_an_argument_handed_on_to_a_sub_block_takes_the_layer_it_meets_there() -> None:
    args, _ = next(iter(input_candidates(_Outer(), P, {})))
    assert args[0]["shape"][1] == 8
    assert args[1]["shape"] == [2, P.seq, 12]  # ``guide`` meets ``attn.gl`` inside ``attn``


def test_a_permute_of_more_dimensions_than_the_input_has_adds_them() -> None:
    """``x.permute((0, 2, 3, 4, 1))`` of a 4-D input: a video head wants 5-D inputs."""
    message = (
        "RuntimeError: permute(sparse_coo): number of dimensions in the tensor input does not "
        "match the length of the desired ordering of dimensions i.e. input.dim() = 4 is not "
        "equal to len(dims) = 5"
    )
    fixed = repair(message, [tensor_spec([2, 16, 8, 8])], P)
    assert fixed is not None
    assert len(fixed[0]["shape"]) == 5


def test_an_unflatten_of_an_input_dimension_sets_its_size() -> None:
    """``x.unflatten(2, (1, self.n_times))`` on inputs of 32 samples: 128 samples."""
    message = (
        "RuntimeError: unflatten: Provided sizes [1, 128] don't multiply up to the size of "
        "dim 2 (32) in the input tensor"
    )
    assert repair(message, [tensor_spec([2, 8, 32])], P) == [tensor_spec([2, 8, 128])]
    assert repair(message, [tensor_spec([2, 8, 16])], P) is None  # another tensor's dim


def test_an_input_a_message_names_gets_the_rank_it_wants() -> None:
    """``labels must be a 1D tensor of shape (batch_size,)``: the labels, not the first
    input; integer labels keep the batch dimension."""
    message = "ValueError: labels must be a 1D tensor of shape (batch_size,)"
    embeddings, labels = tensor_spec([2, 16]), tensor_spec([2, 16], "int64", 10)
    names = ["embeddings", "labels"]
    assert named_rank(message, names, [embeddings, labels], {}, P) == (
        [embeddings, tensor_spec([2], "int64", 10)],
        {},
    )
    assert named_rank(message, names, [embeddings], {"labels": labels}, P) == (
        [embeddings],
        {"labels": tensor_spec([2], "int64", 10)},
    )
    first = "ValueError: embeddings must be a 2D tensor"
    assert named_rank(first, names, [tensor_spec([2, 8, 16]), labels], {}, P) is None
    assert named_rank(message, ["x"], [embeddings], {}, P) is None  # no input of that name


def test_an_input_a_message_names_as_integers_becomes_labels() -> None:
    """``Expected argument `target` to be an int or long tensor``: that input, positional or
    by keyword, as 0/1 labels of its shape; an integer one or an unnamed one is left."""
    message = (
        "ValueError: Expected argument `target` to be an int or long tensor with ground truth"
        " labels but got tensor with dtype torch.float32"
    )
    preds, target = tensor_spec([2, 8]), tensor_spec([2, 8])
    labels = {"shape": [2, 8], "dtype": "int64", "high": 2}
    names = ["preds", "target"]
    assert named_integer(message, names, [preds, target], {}) == ([preds, labels], {})
    assert named_integer(message, names, [preds], {"target": target}) == (
        [preds],
        {"target": labels},
    )
    assert named_integer(message, names, [preds, labels], {}) is None
    assert named_integer(message, ["x", "y"], [preds, target], {}) is None


def test_a_message_naming_the_dimensions_of_the_input_gives_its_rank() -> None:
    """``shape = (batch, len)``, ``in the shape of (batch, freq_bins, timesteps)``: as many
    dimensions as the message names (the first shape it gives)."""
    image = tensor_spec([2, 32, 32, 32])
    two = "ValueError: Only support input with shape = (batch, len) or shape = (len)"
    assert repair(two, [image], P) == [tensor_spec([2, 32])]
    three = "AssertionError: make sure your input is in the shape of (batch, bins, steps)"
    fixed = repair(three, [image], P)
    assert fixed is not None
    assert len(fixed[0]["shape"]) == 3
    assert repair(two, [tensor_spec([2, 32])], P) is None  # already that rank


def test_a_signal_too_short_for_a_window_gets_more_samples() -> None:
    """``Signal length shorter than reflect padding length (n_fft // 2)``: a batch of
    signals 16 times as long, until 2**18 samples."""
    short = "AssertionError: Signal length shorter than reflect padding length (n_fft // 2)."
    assert repair(short, [tensor_spec([2, 32])], P) == [tensor_spec([2, 512])]
    assert repair(short, [tensor_spec([2, 2**15])], P) is None


def test_a_message_asking_for_a_rank_or_a_last_size_in_words_is_answered() -> None:
    """pytorch-crf: ``emissions must have dimension of 3, got 4``, then ``expected last
    dimension of emissions is 2, got 32``: three dimensions, then that size last."""
    image = tensor_spec([2, 32, 32, 32])
    rank = repair("ValueError: emissions must have dimension of 3, got 4", [image], P)
    assert rank is not None
    assert len(rank[0]["shape"]) == 3
    also = repair("ValueError: inputs must have 3 dimensions", [image], P)
    assert also is not None
    assert len(also[0]["shape"]) == 3
    last = "ValueError: expected last dimension of emissions is 2, got 32"
    assert repair(last, [tensor_spec([2, 16, 32])], P) == [tensor_spec([2, 16, 2])]
    assert repair(last, [tensor_spec([2, 16, 8])], P) is None  # not the size it reports


def test_a_stereo_check_gets_two_channels_and_a_float_check_float_targets() -> None:
    """auraloss: ``Input must be stereo: 256 channel(s).`` (the dimension of that size);
    ``mean(): ... Input dtype must be either a floating point or complex dtype. Got: Long``
    (integer targets become floats)."""
    stereo = "ValueError: Input must be stereo: 256 channel(s)."
    assert repair(stereo, [tensor_spec([2, 256, 64])], P) == [tensor_spec([2, 2, 64])]
    assert repair(stereo, [tensor_spec([2, 8, 64])], P) is None
    long = (
        "RuntimeError: mean(): could not infer output dtype. Input dtype must be either a "
        "floating point or complex dtype. Got: Long"
    )
    labels = {"shape": [2, 64], "dtype": "int64", "high": 2}
    assert repair(long, [tensor_spec([2, 64]), labels], P) == [
        tensor_spec([2, 64]),
        {"shape": [2, 64], "dtype": "float32"},
    ]


def test_a_required_argument_of_literal_choices_gets_none_or_the_first_choice() -> None:
    """pykeen: ``forward(h, r, t, *, mode: InductiveMode | None)`` with ``InductiveMode =
    Literal["training", "validation", "testing"]`` (a string annotation under ``from
    __future__ import annotations``): ``None``, the default behaviour; a ``Literal`` alone
    gets its first choice; a union with a tensor is no choice of literals."""
    import inspect
    from typing import Literal, Optional

    from nnrag.validate.probe.inputs import fill_inputs, literal_choice

    mode = Literal["training", "validation", "testing"]
    scope = {"InductiveMode": mode, "__name__": "block", "Optional": Optional, "torch": torch}
    params = [
        inspect.Parameter("h", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("kind", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=mode),
        inspect.Parameter(
            "mode", inspect.Parameter.KEYWORD_ONLY, annotation="InductiveMode | None"
        ),
    ]
    primary = tensor_spec([2, 8])
    args, kwargs = fill_inputs(params, primary, P, scope=scope)
    assert args == [primary, "training"]
    assert kwargs == {"mode": None}
    assert literal_choice("Optional[torch.Tensor]", scope) is not None  # not a choice
    assert literal_choice(mode | None, scope) is None


def test_inputs_read_annotations_through_a_recording_wrapper_of_forward() -> None:
    """The harvest pass wraps ``forward`` with ``functools.wraps`` in its own module: the
    annotations (``mode: "Mode | None"``) still resolve in the block's namespace, so the
    literal argument is ``None`` in a harvesting run too, not a tensor (the test module's
    postponed annotations make it a string there, as in many sources)."""
    import itertools
    from typing import Literal

    from nnrag.validate.probe.inputs import input_candidates

    namespace: dict[str, Any] = {"Mode": Literal["train", "test"], "nn": nn, "__name__": "blk"}
    exec(
        "class Scorer(nn.Module):\n"
        "    def forward(self, x, *, mode: Mode | None):\n"
        "        return x\n",
        namespace,
    )
    recorder: dict[str, Any] = {}
    exec(  # a wrapper whose module knows nothing of ``Mode``
        "import functools\n"
        "def wrap(forward):\n"
        "    @functools.wraps(forward)\n"
        "    def recording(self, *args, **kwargs):\n"
        "        return forward(self, *args, **kwargs)\n"
        "    return recording\n",
        recorder,
    )
    scorer = namespace["Scorer"]
    scorer.forward = recorder["wrap"](scorer.forward)
    candidates = list(itertools.islice(input_candidates(scorer(), P, {}), 2))
    assert candidates
    assert [kwargs for _, kwargs in candidates] == [{"mode": None}] * 2


def test_an_embedding_row_out_of_range_keeps_indices_below_two() -> None:
    """``IndexError: index out of range in self`` from an embedding lookup (pykeen's models
    index entity tables built for a small synthesized graph): every integer input indexes
    rows 0 and 1 only; float inputs and labels already below that stay. Integer indices
    wanted once the first input is one: the float inputs shaped like it become indices."""
    message = "IndexError: index out of range in self"
    heads = {"shape": [2, 16], "dtype": "int64", "high": 10}
    relations = {"shape": [2, 16], "dtype": "int64", "high": 10}
    flags = {"shape": [2, 16], "dtype": "int64", "high": 2}
    fixed = repair(message, [heads, relations, flags, tensor_spec([2, 16])], P)
    assert fixed == [dict(heads, high=2), dict(relations, high=2), flags, tensor_spec([2, 16])]
    assert repair(message, [flags], P) is None
    indices = (
        "RuntimeError: Expected tensor for argument #1 'indices' to have one of the following "
        "scalar types: Long, Int; but got torch.FloatTensor instead"
    )
    floats = [tensor_spec([2, 16]), tensor_spec([2, 16])]
    assert repair(indices, [heads, *floats], P) == [heads, dict(flags), dict(flags)]


def test_the_shape_repair_reaches_inputs_passed_by_keyword() -> None:
    """A same-shape check between the first input and a target given by keyword: the target
    takes the first input's shape; 0/1 label checks make it integer labels."""
    preds, target = tensor_spec([2, 32, 8, 8]), tensor_spec([2, 16, 8])
    same = (
        "RuntimeError: Predictions and targets are expected to have the same shape, but got"
        " torch.Size([2, 32, 8, 8]) and torch.Size([2, 16, 8])."
    )
    assert repair(same, [preds], P) is None  # no second positional input to reshape
    assert repair_with_keywords(same, [preds], {"target": target, "k": 3}, P) == (
        [preds],
        {"target": tensor_spec([2, 32, 8, 8]), "k": 3},
    )
    binary = (
        "RuntimeError: Detected the following values in `target`: tensor([-0.3, 1.2]) but"
        " expected only the following values [0, 1]."
    )
    shaped = tensor_spec([2, 32, 8, 8])
    assert repair_with_keywords(binary, [preds], {"target": shaped}, P) == (
        [preds],
        {"target": {"shape": [2, 32, 8, 8], "dtype": "int64", "high": 2}},
    )
    assert repair_with_keywords(same, [preds], {"k": 3}, P) is None
