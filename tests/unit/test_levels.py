"""A multi-level first input from the constructor's per-level channels (no torch: plain
functions and signatures)."""

from __future__ import annotations

import inspect
from typing import Any

from nnrag.validate.probe.levels import (
    ctor_defaults,
    indexed_levels,
    level_channels,
    level_inputs,
    takes_levels,
)


def _params(func: Any) -> list[inspect.Parameter]:
    return list(inspect.signature(func).parameters.values())


def neck(inputs: Any, scale: float = 1.0) -> None: ...


def layer(x: torch.Tensor) -> None: ...  # noqa: F821  # a string annotation, never evaluated


def spread(*inputs: Any) -> None: ...


def optional(inputs: Any = None) -> None: ...


def test_channel_list_gives_one_map_per_level_each_half_the_side() -> None:
    levels = level_inputs(_params(neck), {"in_channels": [8, 16, 32], "out_channels": 4}, 32)
    assert levels is not None
    assert [spec["shape"] for spec in levels] == [[2, 8, 32, 32], [2, 16, 16, 16], [2, 32, 8, 8]]
    assert {spec["dtype"] for spec in levels} == {"float32"}


def test_many_levels_grow_the_first_side_so_the_last_is_two() -> None:
    levels = level_inputs(_params(neck), {"in_channels": [4] * 6}, 16)
    assert levels is not None
    assert [spec["shape"][-1] for spec in levels] == [64, 32, 16, 8, 4, 2]


def test_index_list_places_the_channels_at_the_levels_it_picks() -> None:
    assert level_channels({"in_channels": [8, 16], "in_index": [1, 3]}) == [8, 8, 8, 16]
    assert level_channels({"in_channels": [8, 16], "in_index": [0, 1]}) == [8, 16]
    assert level_channels({"in_channels": [8, 16], "in_index": -1}) == [8, 16]  # not a list


def test_one_channel_count_or_other_lists_give_no_levels() -> None:
    assert level_channels({"in_channels": 16}) is None
    assert level_channels({"in_channels": [16]}) is None
    assert level_channels({"dilations": [1, 2, 4]}) is None
    assert level_channels({"in_channels": [16, True]}) is None


def test_only_a_required_positional_first_argument_not_typed_one_tensor_takes_levels() -> None:
    assert takes_levels(_params(neck))
    assert takes_levels(_params(spread))
    assert not takes_levels(_params(layer))
    assert not takes_levels(_params(optional))
    assert level_inputs(_params(layer), {"in_channels": [8, 16]}, 32) is None


class Head:
    """Picks its level from its first argument by its own index, two calls deep."""

    def __init__(self, in_index: Any) -> None:
        self.in_index = in_index

    def forward(self, inputs: Any) -> Any:
        return self._features(inputs)

    def _features(self, feats: Any) -> Any:
        return self._select(feats)

    def _select(self, items: Any) -> Any:
        if isinstance(self.in_index, int):
            return items[self.in_index]
        return [items[i] for i in self.in_index]


class Layer:
    def __init__(self) -> None:
        self.dim = 1

    def forward(self, x: Any) -> Any:
        return x.sum(self.dim)


def test_levels_picked_by_the_blocks_own_index_with_one_channel_count() -> None:
    levels = level_inputs(_params(Head(-1).forward), {"in_channels": 8}, 32, Head(-1))
    assert levels is not None
    assert [spec["shape"] for spec in levels] == [[2, 8, 32, 32]]
    assert indexed_levels(Head([0, 2]), "inputs") == 3
    assert indexed_levels(Head(-2), "inputs") == 2


def test_no_levels_without_an_index_or_a_channel_count() -> None:
    assert indexed_levels(Layer(), "x") is None
    assert level_inputs(_params(Layer().forward), {"in_channels": 8}, 32, Layer()) is None
    assert level_inputs(_params(Head(-1).forward), {"channels": 8}, 32, Head(-1)) is None


class Neck:
    def __init__(self, in_channels: Any = (8, 16, 32), out_channels: int = 4) -> None:
        self.in_channels = in_channels

    def forward(self, inputs: Any) -> Any:
        return inputs


def test_constructor_defaults_give_the_levels_when_the_call_gave_none() -> None:
    defaults = ctor_defaults(Neck())
    assert defaults == {"in_channels": (8, 16, 32), "out_channels": 4}
    levels = level_inputs(_params(Neck().forward), {**defaults}, 32, Neck())
    assert levels is not None
    assert [spec["shape"][1] for spec in levels] == [8, 16, 32]
