"""Sandbox child: a multi-level first input (a feature pyramid) from the constructor's list of
per-level input channels (``in_channels=[16, 32, 64]``: one feature map per entry)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

_LEVEL_CHANNELS = re.compile(r"^in_?(channels?|chans|channel_list|planes|dims)$")
"""Constructor arguments that, given as a list, give each input level's channels."""
_LEVEL_INDEX = re.compile(r"^in_?(index|indices|idx)$")
"""Constructor arguments that, given as a list, pick the levels the block reads."""
_ONE_TENSOR = re.compile(r"^(torch\.)?Tensor$|^<class 'torch\.Tensor'>$")
MAX_LEVELS = 8


def level_channels(ctor: Mapping[str, object]) -> list[int] | None:
    """The channels of each input level: the first list of two or more positive integers
    given to an ``in_channels``-like constructor argument, placed at the levels a list of
    integers given to an ``in_index``-like argument picks (the levels it skips get the first
    entry's channels); ``None`` when no such list was given."""
    channels = _first_list(ctor, _LEVEL_CHANNELS, least=2, low=1)
    if channels is None or len(channels) > MAX_LEVELS:
        return None
    picked = _first_list(ctor, _LEVEL_INDEX, least=1, low=0)
    if picked is None or len(picked) != len(channels):
        return channels
    levels = [channels[0]] * (max(picked) + 1)
    for at, count in zip(picked, channels, strict=True):
        levels[at] = count
    return levels if len(levels) <= MAX_LEVELS else channels


def level_maps(channels: list[int], side: int) -> list[dict[str, Any]]:
    """One ``(2, C_i, S_i, S_i)`` float map per level, highest resolution first, each level
    half the side of the one before (the first side grows until the last is at least 2)."""
    top = max(side, 2 ** len(channels))
    return [
        {"shape": [2, count, top >> i, top >> i], "dtype": "float32"}
        for i, count in enumerate(channels)
    ]


def takes_levels(params: list[inspect.Parameter]) -> bool:
    """Whether ``forward``'s first argument can be a list of maps: positional, required and
    not annotated as one tensor."""
    first = next((p for p in params if p.kind != p.VAR_KEYWORD), None)
    if first is None or first.kind == first.KEYWORD_ONLY:
        return False
    if first.kind != first.VAR_POSITIONAL and first.default is not first.empty:
        return False
    text = first.annotation if isinstance(first.annotation, str) else repr(first.annotation)
    return first.annotation is first.empty or _ONE_TENSOR.match(text.strip("'\" ")) is None


def level_inputs(
    params: list[inspect.Parameter], ctor: Mapping[str, object], side: int
) -> list[dict[str, Any]] | None:
    """The first input as a feature pyramid (:func:`level_maps`) when the constructor was
    given per-level channels (:func:`level_channels`) and forward's first argument can take
    a list (:func:`takes_levels`); ``None`` otherwise."""
    channels = level_channels(ctor)
    if channels is None or not takes_levels(params):
        return None
    return level_maps(channels, side)


def _first_list(
    ctor: Mapping[str, object], names: re.Pattern[str], *, least: int, low: int
) -> list[int] | None:
    """The first value given to an argument ``names`` matches that is a list or tuple of at
    least ``least`` integers, each ``>= low``."""
    for key, value in ctor.items():
        if (
            names.match(key)
            and isinstance(value, (list, tuple))
            and len(value) >= least
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value)
        ):
            return [int(v) for v in value]
    return None
