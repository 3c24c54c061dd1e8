"""Constructor values from the constructor's own failing ``assert`` (no torch: plain classes)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.init_asserts import asserted_ctor

SUM, MEAN = "sum", "mean"


def _part(cfg: Any) -> None:
    assert cfg is None or isinstance(cfg, dict)


class Inputs:
    def __init__(self, in_channels: Any, in_index: Any = -1, transform: str | None = None) -> None:
        self._init_inputs(in_channels, in_index, transform)

    def _init_inputs(self, channels: Any, index: Any, transform: str | None) -> None:
        if transform is not None:
            assert isinstance(channels, (list, tuple))
            assert isinstance(index, (list, tuple))
            assert len(channels) == len(index)


class Head(Inputs):
    """Its base checks its inputs; it passes them on in ``**kwargs``."""

    def __init__(self, width: int, **kwargs: Any) -> None:
        super().__init__(transform="select", **kwargs)


class Stages:
    def __init__(self, strides: Any = (2, 2, 2, 2), dilations: Any = (1, 1, 1, 1), n: int = 4):
        assert len(strides) == len(dilations) == n


class Units:
    def __init__(self, blocks: list[int], num_units: int = 3) -> None:
        assert num_units == len(blocks)


class Bounded:
    def __init__(self, drop: float = 0.0, level: int = 2, levels: int = 4) -> None:
        self.level = level
        self.levels = levels
        assert 0 < drop <= 1
        assert 0 <= self.level < self.levels


class Longer:
    def __init__(self, outs: list[int], ins: list[int], indices: Any = (3,), stages: int = 1):
        assert len(outs) > len(ins)
        assert max(indices) < stages


class Table:
    MODES: ClassVar[dict[str, int]] = {"bottom": 2, "left": 3}

    def __init__(self, mode: str, kind: str = "x", reduce: str = "?") -> None:
        assert mode in self.MODES
        assert kind in {SUM, MEAN}
        assert reduce in ("mean", "none"), "reduction is one of " \
            "mean, none"  # fmt: skip


class Arch:
    ZOO: ClassVar[dict[str, dict[str, list[int]]]] = {
        "big": {"depths": [2, 2, 12, 2], "widths": [96, 192, 384, 768]},
        "tiny": {"depths": [1, 1], "widths": [8, 16]},
    }

    def __init__(self, arch: Any) -> None:
        keys = {"depths", "widths"}
        assert isinstance(arch, dict) and set(arch) == keys, f"needs keys {keys}"  # noqa: PT018 - one test


class Base:
    def __init__(self, num_classes: int = -1, channels: int = 16) -> None:
        self.num_classes = num_classes
        self.channels = channels


class Loss(Base):
    """The attributes it asserts on were set by its base, before."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        assert self.num_classes != -1


class Heads:
    def __init__(self, dim: int, heads: int) -> None:
        assert dim % heads == 0


class Configs:
    """``cfg`` reaches the assert as ``self.cfg``, through another function."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        _part(cfg=self.cfg)


class Exact:
    def __init__(self, reduction: str = "mean", per_image: bool = False) -> None:
        if not per_image:
            assert reduction == "none", "reduction should be 'none' when per_image is False"


class Smooth:
    def __init__(self, value: Any) -> None:
        assert isinstance(value, float) and 0 <= value < 1  # noqa: PT018 - one test


class Local:
    def __init__(self, cfg: dict[str, Any]) -> None:
        kind = cfg["kind"]
        assert kind in ("a", "b")


class Pool:
    def __init__(self, mode: str) -> None:
        assert mode in ("top", "left")


class Pair:
    """Each item of a list goes to a part."""

    def __init__(self, directions: list[str]) -> None:
        self.first = Pool(directions[0])
        self.second = Pool(directions[1])


class Paths:
    def __init__(self, paths: list[Any]) -> None:
        for d in paths:
            assert d in ("bu", "td")


class Computed:
    def __init__(self, cfg: dict[str, Any]) -> None:
        kind = str(cfg["kind"])
        assert kind in ("a", "b")


def _repaired(cls: type, *args: Any, steps: int = 4, **kwargs: Any) -> dict[str, object]:
    """The keyword arguments that build ``cls`` after the repairs, one per failed assert."""
    ctor = Ctor("synthesized", args, kwargs)
    for _ in range(steps):
        error = _raised(cls, ctor)
        if error is None:
            return ctor.kwargs
        fixed = asserted_ctor(ctor, cls, error)
        assert fixed is not None, f"no repair for {error!r}"
        ctor = fixed
    raise AssertionError(f"still failing after {steps} repairs: {ctor.kwargs}")


def _raised(cls: type, ctor: Ctor) -> BaseException | None:
    try:
        cls(*ctor.args, **ctor.kwargs)
    except (AssertionError, TypeError) as error:
        return error
    return None


def test_isinstance_list_makes_a_list_and_the_asserts_after_it_hold_too() -> None:
    # the names are the base's helper's own; followed up through the call and **kwargs
    kwargs = _repaired(Head, width=8, in_channels=16, steps=2)
    assert kwargs == {"width": 8, "in_channels": [16, 16], "in_index": [-1, -1]}


def test_equal_lengths_cut_or_repeat_the_lists() -> None:
    assert _repaired(Stages, n=2) == {"n": 2, "strides": (2, 2), "dilations": (1, 1)}
    assert _repaired(Stages, dilations=[1], n=3)["dilations"] == [1, 1, 1]


def test_a_size_too_large_for_a_small_block_takes_the_lists_length() -> None:
    assert _repaired(Units, blocks=[1, 1]) == {"blocks": [1, 1, 1]}  # the default's length
    assert _repaired(Units, blocks=[1, 1], num_units=16) == {"blocks": [1, 1], "num_units": 2}


def test_bounds_move_a_float_between_them_and_an_int_to_the_nearest() -> None:
    assert _repaired(Bounded, levels=2) == {"levels": 2, "drop": 0.5, "level": 1}


def test_a_length_and_the_largest_item_are_bounded() -> None:
    kwargs = _repaired(Longer, outs=[16, 16], ins=[16, 16])
    assert kwargs == {"outs": [16, 16, 16], "ins": [16, 16], "indices": (0,)}


def test_membership_takes_the_first_key_or_the_smallest_member() -> None:
    kwargs = _repaired(Table, mode="nearest")
    assert kwargs == {"mode": "bottom", "kind": "mean", "reduce": "mean"}


def test_set_of_keys_takes_the_smallest_entry_of_a_table_with_those_keys() -> None:
    assert _repaired(Arch, arch={"depths": 16}) == {"arch": {"depths": [1, 1], "widths": [8, 16]}}


def test_attributes_a_base_set_lead_back_to_its_parameter() -> None:
    assert _repaired(Loss) == {"num_classes": 10}  # the size its name suggests


def test_divisible_rounds_up_to_a_multiple() -> None:
    assert _repaired(Heads, dim=30, heads=4) == {"dim": 32, "heads": 4}


def test_none_or_a_dict_takes_none_through_an_attribute_and_a_call() -> None:
    assert _repaired(Configs, cfg=object()) == {"cfg": None}


def test_a_statement_over_several_lines_is_read_whole() -> None:
    assert _repaired(Exact) == {"reduction": "none"}


def test_an_item_of_a_parameter_is_set_in_it() -> None:
    assert _repaired(Local, cfg={"kind": 1, "width": 8}) == {"cfg": {"kind": "a", "width": 8}}
    assert _repaired(Pair, directions=["up", "down"]) == {"directions": ["top", "top"]}


def test_the_variable_of_a_loop_over_a_parameter_sets_every_item() -> None:
    assert _repaired(Paths, paths=[16, 16]) == {"paths": ["bu", "bu"]}


def test_the_kind_is_fixed_before_the_bounds() -> None:
    assert _repaired(Smooth, value=16) == {"value": 0.5}


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (Computed, {"cfg": {"kind": 1}}),  # computed from a parameter: nothing to set
        (Stages, {"strides": object(), "n": 2}),  # not a list, nothing to measure
    ],
)
def test_no_repair_when_no_parameter_can_hold_the_test(cls: type, kwargs: dict[str, Any]) -> None:
    ctor = Ctor("synthesized", (), kwargs)
    error = _raised(cls, ctor)
    assert error is not None
    assert asserted_ctor(ctor, cls, error) is None


def test_only_synthesized_calls_are_repaired() -> None:
    hinted = Ctor("hinted", (), {"blocks": [1]})
    error = _raised(Units, hinted)
    assert isinstance(error, AssertionError)
    assert asserted_ctor(hinted, Units, error) is None
