"""Sandbox child: screen forward inputs on a meta-device copy of a block (shapes, no compute)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from copy import deepcopy
from typing import Any

import torch
from torch import nn

from nnrag.validate.probe.budget import SearchInterrupted
from nnrag.validate.probe.inputs import build_inputs
from nnrag.validate.refusals import DecidedByViolation

MAX_SCREENS = 80
"""Bound on meta-device screens per block (they cost no compute, but Python still runs)."""
_META_UNSUPPORTED = re.compile(
    r"meta|same device|device type|data-dependent|no data|numpy|\.item\(\)|fake", re.I
)
_PLAIN = (int, float, str, bool, type(None))


def _plain(value: object) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, _PLAIN)


class MetaScreen:
    """A meta-device copy of a block that tells, without compute, which inputs fail on shapes.

    ``check`` returns ``None`` when the candidate ran (or meta could not judge it) and the
    error message when it failed. After two candidates meta could not judge,
    the screen turns itself off and every candidate goes straight to the real run.
    """

    def __init__(
        self,
        block: nn.Module,
        rebuild: Callable[[], nn.Module],
        ctor_values: list[object],
        *,
        always: bool = False,
    ) -> None:
        self.block, self.rebuild, self.ctor_values = block, rebuild, ctor_values
        self.always = always
        self.built = False
        self._copy: nn.Module | None = None
        self.parameters = sum(p.numel() for p in block.parameters() if _sized(p))
        self.screens = 0
        self.rejected = 0
        self.unsupported = 0

    @property
    def copy(self) -> nn.Module | None:
        """The meta-device copy, built on first use (``None`` when it cannot be built)."""
        if not self.built:
            self.built = True
            self._copy = meta_copy(self.block, self.rebuild, self.ctor_values)
        return self._copy

    def worth(self, args: list[Any], kwargs: dict[str, Any]) -> bool:
        """Whether a real run of this candidate is costly enough to screen it first."""
        if self.always:
            return True
        elements = _elements([*args, *kwargs.values()])
        return elements >= HEAVY_ELEMENTS or self.parameters * max(1, elements) >= HEAVY_WORK

    @classmethod
    def of(
        cls, block: nn.Module, rebuild: Callable[[], nn.Module], ctor_values: list[object]
    ) -> MetaScreen:
        """A screen that screens every candidate (tests and measurements)."""
        return cls(block, rebuild, ctor_values, always=True)

    @property
    def active(self) -> bool:
        return self.copy is not None and self.screens < MAX_SCREENS and self.unsupported < 2

    def check(self, args: list[Any], kwargs: dict[str, Any], seed: int) -> str | None:
        """The error ``args``/``kwargs`` raise on the meta copy, else ``None``."""
        if self.copy is None:
            return None
        self.screens += 1
        try:
            with torch.device("meta"), torch.no_grad():
                real_args, real_kwargs = build_inputs(args, kwargs, seed)
                self.copy(*real_args, **real_kwargs)
        except (SearchInterrupted, DecidedByViolation):  # the search ends here
            raise
        except BaseException as error:  # the real run reports interrupts and memory itself
            text = str(error)
            if isinstance(
                error, (NotImplementedError, KeyboardInterrupt, SystemExit, MemoryError)
            ) or _META_UNSUPPORTED.search(text):
                self.unsupported += 1
                return None
            self.rejected += 1
            return f"{type(error).__name__}: {text}"
        return None


def meta_copy(
    block: nn.Module, rebuild: Callable[[], nn.Module], ctor_values: list[object]
) -> nn.Module | None:
    """Build under the meta device (plain constructor arguments) or deep-copy to it."""
    copy: nn.Module | None = None
    if _plain(ctor_values):
        try:
            with torch.device("meta"):
                copy = rebuild()
        except Exception:
            copy = None
        if copy is not None and any(
            t.device.type != "meta" for t in [*copy.parameters(), *copy.buffers()]
        ):
            copy = None
    if copy is None and sum(p.numel() for p in block.parameters() if _sized(p)) <= 5_000_000:
        try:
            copy = deepcopy(block).to("meta")
        except Exception:
            copy = None
    if copy is not None:
        copy.eval()
    return copy


HEAVY_ELEMENTS = 1 << 19
"""Input elements from which a candidate is screened on meta before its real run."""
HEAVY_WORK = 1 << 34
"""Parameters x input elements from which a candidate is screened (big blocks)."""


def _elements(value: Any, depth: int = 0) -> int:
    if isinstance(value, dict) and "shape" in value:
        return int(math.prod(value["shape"]))
    if depth > 4:
        return 0
    if isinstance(value, dict):
        return sum(_elements(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_elements(v, depth + 1) for v in value)
    return 0


def _sized(param: torch.Tensor) -> bool:
    return not isinstance(param, nn.parameter.UninitializedParameter)
