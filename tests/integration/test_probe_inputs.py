"""Input candidates, shape repairs and meta-device screening on small hand-made modules."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from nnrag.validate.probe.inputs import (  # noqa: E402
    dict_keys,
    fill_inputs,
    forward_params,
    input_candidates,
)
from nnrag.validate.probe.profiles import PROFILES  # noqa: E402
from nnrag.validate.probe.reshape import repair, token_count  # noqa: E402
from nnrag.validate.probe.runner import Runner  # noqa: E402
from nnrag.validate.probe.screen import MetaScreen  # noqa: E402
from nnrag.validate.probe.values import tensor_spec  # noqa: E402

pytestmark = pytest.mark.integration
P = PROFILES[0]


def shapes(args: list[Any]) -> list[Any]:
    return [a["shape"] if isinstance(a, dict) and "shape" in a else a for a in args]


# --------------------------------------------------------------------------- repairs


def test_rank_from_should_be_n_dimensional() -> None:
    fixed = repair(
        "input should be 5 dimensional. Got 4 dimensions.", [tensor_spec([2, 16, 8, 8])], P
    )
    assert fixed is not None
    assert len(fixed[0]["shape"]) == 5


def test_permitted_channel_values() -> None:
    message = "Input image tensor permitted channel values are [1, 3], but found 32"
    fixed = repair(message, [tensor_spec([2, 32, 8, 8])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 3, 8, 8]


def test_supported_channel_counts_set_the_channel_dimension() -> None:
    message = "'VecNorm' only support 3 or 8 channels (got 16)"
    fixed = repair(message, [tensor_spec([2, 16, 32])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 3, 32]
    assert repair(message, [tensor_spec([2, 4, 32])], P) is None  # no dimension of 16


def test_iterated_tensor_becomes_a_list() -> None:
    message = "not enough values to unpack (expected 4, got 3)"
    fixed = repair(message, [tensor_spec([2, 8, 4, 4])], P)
    assert fixed is not None
    assert isinstance(fixed[0], list)
    assert [s["shape"] for s in fixed[0]] == [[2, 8, 4, 4], [2, 8, 4, 4]]


def test_token_count_mismatch_sets_tokens_or_scales_the_side() -> None:
    assert token_count([2, 256, 32], 256, 49) == [2, 49, 32]
    assert token_count([2, 32, 8, 8], 16, 49) == [2, 32, 14, 14]  # 4x4 after a stride 2 -> 7x7
    assert token_count([2, 32, 8, 8], 16, 50) is None
    message = (
        "The size of tensor a (256) must match the size of tensor b (49)"
        " at non-singleton dimension 3"
    )
    fixed = repair(message, [tensor_spec([2, 256, 32])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 49, 32]


# --------------------------------------------------------------------------- candidates from source


class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 4, 1)

    def forward(self, x):  # type: ignore[no-untyped-def]  # the block's own style
        # type: (List[Tensor]) -> Tensor
        return torch.cat([self.conv(f).flatten(1) for f in x], 1)


class Keyed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.low = nn.Conv2d(8, 4, 1)
        self.high = nn.Conv2d(8, 4, 1)

    def forward(self, inputs):  # type: ignore[no-untyped-def]  # a toy module in a test: untyped like user code
        return self.low(inputs["low"]) + self.high(inputs.get("high"))


class Named(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)

    def forward(self, x: list[torch.Tensor], names: list[str]) -> list[torch.Tensor]:
        names.append("pool")
        return [self.conv(t) for t in x]


def test_type_comment_gives_the_annotation() -> None:
    (param,) = forward_params(Heads())
    assert param.annotation == "List[Tensor]"
    args, _ = next(input_candidates(Heads(), P, {}))
    assert isinstance(args[0], list)
    assert args[0][0]["shape"][1] == 8


def test_string_keys_read_in_forward_make_a_dict() -> None:
    assert dict_keys(Keyed().forward) == {"inputs": ["low", "high"]}
    args, _ = next(input_candidates(Keyed(), P, {}))
    assert set(args[0]["__dict__"]) == {"low", "high"}


def test_list_of_names_beside_tensors() -> None:
    args, _ = next(input_candidates(Named(), P, {}))
    assert isinstance(args[0], list)
    assert args[1] == ["0", "1"]


# --------------------------------------------------------------------------- meta screening


class Square(nn.Module):
    """Only a 12x12 image passes: the flattened size is fixed by the constructor."""

    def __init__(self, side: int = 12) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4 * side * side, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.conv(x).flatten(1))


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x[x.sum(-1) > 0])


def test_meta_screen_rejects_a_shape_error_without_compute() -> None:
    block = Square()
    screen = MetaScreen.of(block, Square, [])
    assert screen.copy is not None
    assert next(screen.copy.parameters()).device.type == "meta"
    assert next(block.parameters()).device.type == "cpu"
    error = screen.check([tensor_spec([2, 3, 8, 8])], {}, 0)
    assert error is not None
    assert "reduction dim" in error
    assert screen.check([tensor_spec([2, 3, 12, 12])], {}, 0) is None
    assert (screen.screens, screen.rejected) == (2, 1)


def test_meta_screen_turns_off_where_meta_cannot_judge() -> None:
    screen = MetaScreen.of(DataDependent(), DataDependent, [])
    for _ in range(2):
        assert screen.check([tensor_spec([3, 4])], {}, 0) is None
    assert screen.unsupported == 2
    assert not screen.active


def test_meta_screen_deep_copies_when_arguments_are_modules() -> None:
    inner = nn.Linear(4, 4)
    screen = MetaScreen.of(inner, lambda: nn.Sequential(inner), [inner])
    assert screen.copy is not None
    assert next(inner.parameters()).device.type == "cpu"


BLOCK = """
import torch
from torch import nn


class Square(nn.Module):
    def __init__(self, img_size: int = 12) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4 * 4 * img_size * img_size, 2)  # wants 2 * img_size

    def forward(self, x):
        return self.head(self.conv(x).flatten(1))
"""


@pytest.mark.parametrize("meta", [True, False])
def test_runner_passes_on_cpu_with_or_without_screening(tmp_path: Path, meta: bool) -> None:
    mode: str | bool = "always" if meta else False
    path = tmp_path / "block.py"
    path.write_text(textwrap.dedent(BLOCK))
    sent: list[dict[str, Any]] = []
    request = {"path": str(path), "class_name": "Square", "depth": "forward", "meta_screen": mode}
    Runner(request, sent.append, []).run()
    result = sent[-1]
    assert result["kind"] == "result"
    assert result["failed_stage"] is None
    assert result["stage_reached"] == "forward"
    assert result["recipe"]["inputs"][0]["shape"] == [2, 3, 24, 24]
    assert result["recipe"].get("meta_screen", False) is meta
    # one constructor; 12x12 fails, its mat1/mat2 repair fails, 24x24 passes: on CPU that is
    # three forward runs, with screening the two failures are found on meta and only 24x24 runs
    assert result["recipe"]["attempts"] == (2 if meta else 4)
    if meta:
        assert result["recipe"]["screens"] == 3


# --------------------------------------------------------------------------- more repairs


def test_channels_last_norm_transposes_the_image() -> None:
    message = (
        "Given normalized_shape=[16], expected input with shape [*, 16],"
        " but got input of size[2, 16, 8, 8]"
    )
    fixed = repair(message, [tensor_spec([2, 16, 8, 8])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 8, 8, 16]


def test_window_partition_sets_a_multiple_of_the_window() -> None:
    message = "RuntimeError: shape '[2, 2, 7, 2, 7, 32]' is invalid for input of size 16384"
    fixed = repair(message, [tensor_spec([2, 16, 16, 32])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 14, 14, 32]  # channels last: the view ends in C
    message = "RuntimeError: shape '[2, 0, 7, 0, 7, 32]' is invalid for input of size 1024"
    fixed = repair(message, [tensor_spec([2, 4, 4, 32])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 7, 7, 32]  # no whole window yet: one window


def test_class_token_from_a_view_or_an_assertion() -> None:
    message = "RuntimeError: shape '[2, 257, -1]' is invalid for input of size 8192"
    fixed = repair(message, [tensor_spec([2, 256, 16])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 257, 16]
    dropped = "RuntimeError: shape '[2, 8, 4, 4, 4]' is invalid for input of size 960"
    fixed = repair(dropped, [tensor_spec([2, 16, 32]), {"__tuple__": [4, 4]}], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 17, 32]
    assert fixed[1] == {"__tuple__": [4, 4]}
    fixed = repair("AssertionError: ", [tensor_spec([2, 16, 32]), {"__tuple__": [4, 4]}], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 17, 32]
    assert repair("AssertionError: ", [tensor_spec([2, 16, 32])], P) is None


def test_channel_repair_changes_only_the_input_the_layer_saw() -> None:
    two = [tensor_spec([2, 32, 8, 8]), tensor_spec([2, 32, 8, 8])]
    message = (
        "Given groups=1, weight of size [128, 2, 7, 7], expected input[2, 32, 8, 8]"
        " to have 2 channels, but got 32 channels instead"
    )
    fixed = repair(message, two, P)
    assert fixed is not None
    assert [a["shape"][1] for a in fixed] == [2, 32]
    message = (
        "Given groups=1, weight of size [32, 48, 3, 3], expected input[2, 64, 8, 8]"
        " to have 48 channels, but got 64 channels instead"
    )
    fixed = repair(message, two, P)  # the two were concatenated
    assert fixed is not None
    assert [a["shape"][1] for a in fixed] == [24, 24]


def test_concatenated_list_splits_the_channels() -> None:
    items = [[tensor_spec([2, 32, 8, 8]), tensor_spec([2, 32, 8, 8])]]
    message = (
        "Given groups=1, weight of size [32, 32, 1, 1], expected input[2, 64, 8, 8]"
        " to have 32 channels, but got 64 channels instead"
    )
    fixed = repair(message, items, P)
    assert fixed is not None
    assert [a["shape"][1] for a in fixed[0]] == [16, 16]


def test_broadcast_on_channels_changes_the_first_of_equal_images() -> None:
    two = [tensor_spec([2, 48, 8, 8]), tensor_spec([2, 48, 8, 8])]
    message = (
        "The size of tensor a (64) must match the size of tensor b (48)"
        " at non-singleton dimension 1"
    )
    fixed = repair(message, two, P)
    assert fixed is not None
    assert [a["shape"][1] for a in fixed] == [64, 48]


def test_class_token_added_by_the_block() -> None:
    # tokens (2, 16, C) became 17 with a class token; the table holds 1 + 4096
    assert token_count([2, 16, 32], 17, 4097) == [2, 4096, 32]


class Detector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, images: list[torch.Tensor]) -> list[torch.Tensor]:
        return [self.conv(image[None]) for image in images]


def test_detection_style_images_are_a_list_of_unbatched_images() -> None:
    args, _ = next(input_candidates(Detector(), P, {}))
    assert [a["shape"] for a in args[0]] == [[3, 32, 32], [3, 32, 32]]


def test_space_to_depth_channels_and_depth_to_space_blocks() -> None:
    message = (
        "Given groups=1, weight of size [64, 48, 3, 3], expected input[2, 768, 2, 2]"
        " to have 48 channels, but got 768 channels instead"
    )
    fixed = repair(message, [tensor_spec([2, 48, 8, 8])], P)  # 48 * 16 seen: C must be 3
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 3, 8, 8]
    message = "RuntimeError: shape '[2, 3, 3, 3, 32, 32]' is invalid for input of size 65536"
    fixed = repair(message, [tensor_spec([2, 32, 32, 32])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 27, 32, 32]


class Fourier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Conv2d(4, 8, 1)

    def forward(self, B, H, W):  # type: ignore[no-untyped-def]  # a toy module in a test: untyped like user code
        return self.proj(torch.ones(B, 4, H, W))


def test_batch_size_and_sides_as_ints() -> None:
    args, _ = next(input_candidates(Fourier(), P, {}))
    assert all(isinstance(a, int) for a in args)
    assert args[0] == 2


HOLDER = """
from typing import List, Tuple

import torch
from torch import nn


class Batch:
    def __init__(self, tensors: torch.Tensor, sizes: List[Tuple[int, int]]) -> None:
        self.tensors = tensors
        self.sizes = sizes


class Anchors(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.levels = 1
        self.proj = nn.Conv2d(3, 4, 1)

    def forward(self, batch: Batch, features: List[torch.Tensor]) -> torch.Tensor:
        assert len(features) == self.levels, "the number of feature maps must match"
        return self.proj(batch.tensors).mean() + features[0].mean() + len(batch.sizes)
"""


def test_an_argument_typed_with_the_files_own_class_is_built(tmp_path: Path) -> None:
    path = tmp_path / "holder.py"
    path.write_text(HOLDER)
    sent: list[dict[str, Any]] = []
    Runner({"path": str(path), "class_name": "Anchors"}, sent.append, []).run()
    result = sent[-1]
    assert result["failed_stage"] is None
    batch, features = result["recipe"]["inputs"]
    assert batch["__new__"] == {"__ref__": "nnrag_block:Batch"}
    assert len(batch["args"][1]) == batch["args"][0]["shape"][0]  # one size per image
    assert len(features) == 1  # shortened to the configured number of levels


def test_loss_targets_become_class_indices() -> None:
    args = [tensor_spec([2, 32]), tensor_spec([2, 32], "int64", 10)]
    message = "RuntimeError: result type Float can't be cast to the desired output type Long"
    fixed = repair(message, args, P)
    assert fixed is not None
    assert fixed[1] == tensor_spec([2], "int64", 32)


class Patches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(12, 8)

    def forward(self, batch):  # type: ignore[no-untyped-def]  # a toy module in a test: untyped like user code
        x = self.proj(batch["patches"])
        keep = ~batch["patch_valid"]
        return x.masked_fill(keep[..., None], 0.0) + batch["patch_coord"].sum(-1, keepdim=True)


def test_dict_entries_take_their_kind_from_the_key() -> None:
    params = forward_params(Patches())
    args, _ = fill_inputs(params, tensor_spec([2, 16, 12]), P, dict_keys(Patches().forward))
    entries = args[0]["__dict__"]
    assert entries["patch_valid"] == tensor_spec([2, 16], "bool")
    assert entries["patch_coord"]["shape"] == [2, 16, 2]
    assert entries["patch_coord"]["dtype"] == "int64"
    assert entries["patches"]["shape"] == [2, 16, 12]


class Sized(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Conv2d(2, 8, 1)

    def forward(self, shape: tuple[int, int, int]) -> torch.Tensor:
        b, h, w = shape
        return self.proj(torch.ones(b, 2, h, w))


def test_int_tuple_argument_gets_sizes() -> None:
    args, _ = next(input_candidates(Sized(), P, {}))
    assert args[0]["__tuple__"][0] == 2
    assert len(args[0]["__tuple__"]) == 3


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(12, 8, batch_first=True)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.rnn(x)[0])


def test_recurrent_first_layer_sets_the_feature_size() -> None:
    args, _ = next(input_candidates(Recurrent(), P, {}))
    assert args[0]["shape"][-1] == 12
    message = "RuntimeError: input.size(-1) must be equal to input_size. Expected 12, got 8"
    fixed = repair(message, [tensor_spec([2, 16, 8])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 16, 12]


def test_auto_screening_only_for_costly_candidates() -> None:
    screen = MetaScreen(Square(), Square, [])
    assert not screen.built
    assert not screen.worth([tensor_spec([2, 3, 12, 12])], {})
    assert screen.worth([tensor_spec([2, 32, 128, 128])], {})
    assert not screen.built  # the meta copy is built on first use only


def test_a_block_that_permutes_channels_last_itself_gets_channels_last() -> None:
    # the conv saw our (B, C, H, W) permuted to (B, W, C, H): the block wants (B, H, W, C)
    message = (
        "RuntimeError: Given groups=1, weight of size [64, 48, 3, 3], expected input[2, 16, 48, 16]"
        " to have 48 channels, but got 16 channels instead"
    )
    fixed = repair(message, [tensor_spec([2, 48, 16, 16])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 16, 16, 48]
    plain = message.replace("input[2, 16, 48, 16]", "input[2, 16, 8, 8]")
    fixed = repair(plain, [tensor_spec([2, 16, 8, 8])], P)
    assert fixed is not None
    assert fixed[0]["shape"] == [2, 48, 8, 8]  # not a permutation: the channels change


class PerType(nn.Module):
    def __init__(self, types: list[str]) -> None:
        super().__init__()
        self.types = types
        self.lin = nn.Linear(8, 8)

    def forward(self, xs_dict: dict[str, list[torch.Tensor]]) -> dict[str, torch.Tensor]:
        return {t: self.lin(torch.stack(xs_dict[t]).sum(0)) for t in self.types}


def test_dict_of_tensor_lists_is_keyed_by_the_constructor_names() -> None:
    block = PerType(["a", "b"])
    args, _ = next(iter(input_candidates(block, P, {"types": ["a", "b"]})))
    value = args[0]["__dict__"]
    assert set(value) == {"a", "b"}
    assert [item["shape"][-1] for item in value["a"]] == [8, 8]  # a list per name


class Pyramid(nn.Module):
    """A neck: one lateral convolution per input level, each upsampled level added to the
    one above it (the levels must halve in side and carry the constructor's channels)."""

    def __init__(self, in_channels: list[int], out_channels: int) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.laterals = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in in_channels)

    def forward(self, inputs):  # type: ignore[no-untyped-def]  # unannotated on purpose
        assert len(inputs) == len(self.in_channels)
        outs = [lateral(x) for lateral, x in zip(self.laterals, inputs, strict=True)]
        for i in range(len(outs) - 1, 0, -1):
            outs[i - 1] = outs[i - 1] + nn.functional.interpolate(outs[i], scale_factor=2.0)
        return outs[0]


def test_per_level_channels_make_the_first_candidate_a_feature_pyramid() -> None:
    block = Pyramid([4, 8, 16], 8)
    args, kwargs = next(iter(input_candidates(block, P, {"in_channels": [4, 8, 16]})))
    assert [spec["shape"] for spec in args[0]] == [
        [2, 4, P.img, P.img],
        [2, 8, P.img // 2, P.img // 2],
        [2, 16, P.img // 4, P.img // 4],
    ]
    inputs = [torch.randn(spec["shape"]) for spec in args[0]]
    assert block(inputs, **kwargs).shape == (2, 8, P.img, P.img)


class PickingHead(nn.Module):
    """A head that takes a list of levels and reads the one its own ``in_index`` picks."""

    def __init__(self, in_channels: int, in_index: int = -1) -> None:
        super().__init__()
        self.in_index = in_index
        self.conv = nn.Conv2d(in_channels, 4, 3, padding=1)

    def _transform_inputs(self, inputs):  # type: ignore[no-untyped-def]  # unannotated on purpose
        return inputs[self.in_index]

    def forward(self, inputs):  # type: ignore[no-untyped-def]  # unannotated on purpose
        return self.conv(self._transform_inputs(inputs))


def test_a_level_picked_by_the_blocks_own_index_makes_the_first_candidate_a_list() -> None:
    block = PickingHead(8)
    args, _ = next(iter(input_candidates(block, P, {"in_channels": 8})))
    assert [spec["shape"] for spec in args[0]] == [[2, 8, P.img, P.img]]
    assert block([torch.randn(spec["shape"]) for spec in args[0]]).shape == (2, 4, P.img, P.img)
