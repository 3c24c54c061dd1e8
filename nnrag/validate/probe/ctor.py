"""Sandbox child: one constructor candidate (its call, placeholders, profile, inputs)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from nnrag.validate.probe.profiles import Profile

__all__ = ["Ctor"]


@dataclass(slots=True)
class Ctor:
    """One constructor candidate."""

    origin: str
    args: tuple[object, ...] = ()
    kwargs: dict[str, object] = field(default_factory=dict)
    placeholders: list[str] = field(default_factory=list)
    profile: Profile | None = None
    inputs: list[tuple[list[Any], dict[str, Any]]] = field(default_factory=list)
    """Inputs to try before the synthesized ones (a docstring example's call); repairs apply."""

    def with_kwargs(self, changes: Mapping[str, object]) -> Ctor:
        """This candidate with ``changes`` merged into its keyword arguments."""
        return Ctor(
            self.origin,
            self.args,
            {**self.kwargs, **changes},
            self.placeholders,
            self.profile,
            self.inputs,
        )

    def without(self, names: Collection[str]) -> Ctor:
        """This candidate with keyword arguments ``names`` left out (their defaults apply)."""
        return Ctor(
            self.origin,
            self.args,
            {k: v for k, v in self.kwargs.items() if k not in names},
            [p for p in self.placeholders if p not in names],
            self.profile,
            self.inputs,
        )

    def with_placeholders(self, filled: Mapping[str, object]) -> Ctor:
        """This candidate with ``filled`` merged into its keyword arguments, each of them a
        placeholder (a stand-in the constructor gets in place of a value it needs)."""
        return Ctor(
            self.origin,
            self.args,
            {**self.kwargs, **filled},
            [*self.placeholders, *filled],
            self.profile,
            self.inputs,
        )
