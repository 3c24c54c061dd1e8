"""Sandbox child: mapping values for parameters a constructor uses as mappings (``Synth``'s)."""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping
from typing import Any

from nnrag.validate.probe.annotations import admits, is_mapping_type, nothing_to_configure
from nnrag.validate.probe.mappings import MappingUse, keyed_instance, mapping_use
from nnrag.validate.probe.profiles import Profile
from nnrag.validate.probe.usage import parameter_usage
from nnrag.validate.probe.values import call, remember

__all__ = ["MappingValues"]


class MappingValues:
    """The mapping values of :class:`~nnrag.validate.probe.args.Synth` (see
    :func:`~nnrag.validate.probe.mappings.mapping_use`)."""

    module: Any
    profile: Profile
    depth: int
    placeholders: list[str]

    def fill(self, cls: Any) -> tuple[tuple[object, ...], dict[str, object]]:
        raise NotImplementedError

    def field(self, name: str) -> object:
        raise NotImplementedError

    def deeper(self) -> MappingValues:
        raise NotImplementedError

    def is_placeholder(self, value: object) -> bool:
        raise NotImplementedError

    def as_mapping(self, cls: Any, name: str, annotation: Any, value: object) -> object:
        """``value``, or a mapping where the constructor uses ``name`` as one (:func:`mapping_use`)
        and ``value`` cannot serve: a placeholder, an instance of a class with nothing to
        configure, a namespace or scalar only the name chose, an empty mapping to be filled."""
        if isinstance(value, Mapping) and value:
            return value
        placeholder = self.is_placeholder(value) or nothing_to_configure(type(value))
        loose = annotation is inspect.Parameter.empty or is_mapping_type(annotation)
        guessed = (
            loose
            and isinstance(value, (types.SimpleNamespace, int, float, str))
            and not admits(annotation, value)  # ``Union[int, Dict[str, int]]`` takes the int
        )
        if not (placeholder or guessed or isinstance(value, Mapping)) or self.depth >= 2:
            return value
        use = mapping_use(cls, name)
        reads = parameter_usage(cls, name)[0] if isinstance(value, Mapping) else set()
        if use is None and ((placeholder and parameter_usage(cls, name)[1]) or reads):
            use = MappingUse()  # handed to a ``build``, attributes read: a mapping, even empty
        if use is None or (guessed and not use.sure):
            return value
        if isinstance(value, Mapping) and not (use.spread_into or use.default or reads):
            return value
        if placeholder and name in self.placeholders:
            self.placeholders.remove(name)
        return self.mapping(use, value, reads)

    def mapping(self, use: MappingUse, like: object, reads: set[str]) -> object:
        """The arguments of the first class the mapping is spread into that builds with them
        (none builds: the first's), else the mapping default it is handed to; of ``like``'s
        mapping type where that takes them (a config dict class: plus the attributes read)."""
        kwargs: dict[str, object] = dict(use.default or {})
        first: tuple[dict[str, object], list[str], type] | None = None
        for target in use.spread_into[:3]:
            inner = self.deeper()
            try:
                args, found = inner.fill(target)
                first = first or (None if args else (found, inner.placeholders, target))
                target(*args, **found)
            except Exception:
                continue
            if not args:
                first = (found, inner.placeholders, target)
                break
        if first is not None:
            kwargs = first[0]
            self.placeholders.extend(first[1])
        if isinstance(like, Mapping) and type(like) is not dict:
            spread = first[2] if first is not None else None
            scratch = self.deeper()  # data only
            made = keyed_instance(type(like), kwargs, reads, scratch.field, spread)
            if made is not None:
                return remember(made[0], call(type(like), (), made[1]))
        return dict(kwargs)
