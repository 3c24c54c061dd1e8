"""Internal modules used as objects, emitted as ``types.SimpleNamespace`` of inlined members."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence

from nnrag.model import Closure, ImportBinding, ModuleInfo, Unit

__all__ = ["claim_namespaces", "namespace_flat_name", "place_namespaces"]

Entity = tuple[str, ...]
MemberFlat = Callable[[str, str], "str | None"]
"""(module, name) of a member -> its flat name in the emitted file (``None``: not there)."""


def namespace_entity(module: str) -> Entity:
    """The entity emit keys a module's namespace by (a definition with an empty name)."""
    return ("def", module, "")


def namespace_flat_name(module: str) -> str:
    """``_torch_geometric_nn_aggr`` for ``torch_geometric.nn.aggr``."""
    return "_" + module.replace(".", "_")


def claim_namespaces(
    closure: Closure,
    flat: MutableMapping[Entity, str],
    imports: MutableMapping[Entity, ImportBinding],
) -> None:
    """Give each namespace of ``closure`` a free flat name, and import ``types`` for them."""
    if not closure.namespaces:
        return
    taken = set(flat.values())

    def fresh(wanted: str) -> str:
        name, number = wanted, 1
        while name in taken:
            number += 1
            name = f"{wanted}_{number}"
        taken.add(name)
        return name

    types = next((e for e in imports if e[:2] == ("import", "types")), None)
    if types is None or types not in flat:
        local = fresh("types")
        entity = ("import", "types", local)
        imports[entity] = ImportBinding(name=local, module="types", attr=None)
        flat[entity] = local
    for module in sorted(closure.namespaces):
        space: Entity = namespace_entity(module)
        if space not in flat:
            flat[space] = fresh(namespace_flat_name(module))


def types_name(flat: Mapping[Entity, str]) -> str:
    """The flat name ``types`` is imported under."""
    return next(name for entity, name in flat.items() if entity[:2] == ("import", "types"))


def place_namespaces(
    closure: Closure,
    flat: Mapping[Entity, str],
    units: Sequence[tuple[ModuleInfo, Unit]],
    member_flat: MemberFlat,
    wrapped: Mapping[int, str],
) -> dict[int, list[tuple[str, str | None]]]:
    """Namespace statements, each with the flag of the guard it goes under (or ``None``),
    keyed by the position in ``units`` they follow (-1: before all).

    Each namespace comes after the last unit binding one of its members and after the
    namespaces nested in it, so it can be built at load time where the original module
    object was used. A namespace with a member that a guarded unit defines (``wrapped``:
    ``id(unit)`` -> its guard's flag, :mod:`nnrag.extract.guards`) goes under that guard
    too: without the package the member is never defined, and the original module object
    is then never made either (its import raises first).
    """
    if not closure.namespaces:
        return {}
    last: dict[tuple[str, str], int] = {}
    guard_of: dict[tuple[str, str], str] = {}
    for position, (info, unit) in enumerate(units):
        for name in unit.binds:
            last[(info.module, name)] = position
            flag = wrapped.get(id(unit))
            if flag is not None:
                guard_of[(info.module, name)] = flag
    types = types_name(flat)
    placed: dict[str, int] = {}
    out: dict[int, list[tuple[str, str | None]]] = {}

    def place(module: str, visiting: frozenset[str]) -> int:
        if module in placed:
            return placed[module]
        position = -1
        args: list[str] = []
        flag: str | None = None
        for attr, home, name in closure.namespaces.get(module, ()):
            value: str | None
            if name == "__name__":
                value = repr(home)
            elif name:
                value = member_flat(home, name)
                position = max(position, last.get((home, name), -1))
                flag = flag or guard_of.get((home, name))
            elif home in visiting or home not in closure.namespaces:
                value = None
            else:
                position = max(position, place(home, visiting | {module}))
                value = flat.get(namespace_entity(home))
            if value is not None:
                args.append(f"{attr}={value}")
        own = flat[namespace_entity(module)]
        call = f"{types}.SimpleNamespace({', '.join(args)})"
        if len(own) + len(call) > 96:
            inner = "".join(f"    {arg},\n" for arg in args)
            call = f"{types}.SimpleNamespace(\n{inner})"
        text = f"# module {module}, used as an object\n{own} = {call}\n"
        out.setdefault(position, []).append((text, flag))
        placed[module] = position
        return position

    for module in sorted(closure.namespaces):
        place(module, frozenset())
    return out
