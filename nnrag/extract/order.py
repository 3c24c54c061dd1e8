"""Ordering a closure: dependencies first, load-time cycles kept together, in file order."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Mapping

from nnrag.extract.effects import Effect, SortKey
from nnrag.extract.needs import UnitKey
from nnrag.model import Unit

__all__ = ["CallClosure", "Components", "runs_at_load", "topological"]


def topological(
    needs: Mapping[UnitKey, frozenset[UnitKey]], sort_key: Callable[[UnitKey], SortKey]
) -> list[UnitKey]:
    """Dependencies first, ties broken by ``sort_key``; a cycle stays together, in file order.

    The strongly connected components of the ``needs`` graph (Tarjan) are ordered with
    Kahn's algorithm, smallest component key first; members of a component by their key.
    Most closures have no load-time cycle: Kahn's algorithm over the units themselves
    then gives the same order (every component is one unit) without computing components.
    """
    acyclic = _acyclic_order(needs, sort_key)
    if acyclic is not None:
        return acyclic
    components = _components(needs)
    of = {key: number for number, members in enumerate(components) for key in members}
    first = [min(sort_key(k) for k in members) for members in components]
    users: list[set[int]] = [set() for _ in components]
    pending = [0] * len(components)
    for number, members in enumerate(components):
        deps = {of[dep] for key in members for dep in needs[key]} - {number}
        pending[number] = len(deps)
        for dep in deps:
            users[dep].add(number)
    ready = [(first[n], n) for n in range(len(components)) if not pending[n]]
    heapq.heapify(ready)
    order: list[UnitKey] = []
    while ready:
        _, number = heapq.heappop(ready)
        order.extend(sorted(components[number], key=sort_key))
        for user in users[number]:
            pending[user] -= 1
            if not pending[user]:
                heapq.heappush(ready, (first[user], user))
    return order


class Components:
    """A strongly connected component of the load-time needs of units, memoized per index.

    ``needs`` of a unit do not depend on the block and a closure holds everything its units
    need, so a component found in one closure is the same in every closure that has one of
    its units. With each component's transitive needs (``reach``) known, only the needs not
    implied by another need (``direct``) are edges for Kahn's algorithm: the same order as
    :func:`topological`, with a fraction of the edges and no per-block Tarjan.
    """

    __slots__ = ("direct", "first", "members", "reach")

    def __init__(self, members: list[UnitKey], sort_key: Callable[[UnitKey], SortKey]) -> None:
        self.members = sorted(members, key=sort_key)
        self.first = sort_key(self.members[0])
        self.reach: frozenset[Components] = frozenset()
        self.direct: tuple[Components, ...] = ()

    @staticmethod
    def order(
        memo: dict[UnitKey, Components],
        needs: Mapping[UnitKey, frozenset[UnitKey]],
        sort_key: Callable[[UnitKey], SortKey],
    ) -> list[UnitKey]:
        """``needs`` (closed: it holds every unit its units need) in :func:`topological` order."""
        if any(key not in memo for key in needs):
            Components._learn(memo, needs, sort_key)
        present = {memo[key]: None for key in needs}
        pending: dict[Components, int] = {}
        users: dict[Components, list[Components]] = {}
        ready: list[tuple[SortKey, int, Components]] = []
        for component in present:
            pending[component] = len(component.direct)
            if not component.direct:
                ready.append((component.first, id(component), component))
            for dep in component.direct:
                users.setdefault(dep, []).append(component)
        heapq.heapify(ready)
        order: list[UnitKey] = []
        while ready:
            component = heapq.heappop(ready)[2]
            order.extend(component.members)
            for user in users.get(component, ()):
                left = pending[user] - 1
                pending[user] = left
                if not left:
                    heapq.heappush(ready, (user.first, id(user), user))
        return order

    @staticmethod
    def _learn(
        memo: dict[UnitKey, Components],
        needs: Mapping[UnitKey, frozenset[UnitKey]],
        sort_key: Callable[[UnitKey], SortKey],
    ) -> None:
        # A known unit needs only known units (its component was learned with everything it
        # reaches), so the new components are those of the new units, with edges among them.
        # Tarjan yields a component after every component it reaches.
        new = {key: frozenset(d for d in deps if d not in memo) for key, deps in needs.items()}
        for key in [key for key in new if key in memo]:
            del new[key]
        for members in _components(new):
            component = Components(members, sort_key)
            for key in members:
                memo[key] = component
            deps = {memo[dep] for key in members for dep in needs[key]}
            deps.discard(component)
            implied: set[Components] = set()
            for dep in deps:
                implied |= dep.reach
            component.reach = frozenset(deps | implied)
            component.direct = tuple(sorted(deps - implied, key=lambda c: c.first))


def _acyclic_order(
    needs: Mapping[UnitKey, frozenset[UnitKey]], sort_key: Callable[[UnitKey], SortKey]
) -> list[UnitKey] | None:
    """Kahn's algorithm over single units, smallest key first; ``None`` on a cycle."""
    pending: dict[UnitKey, int] = {}
    users: dict[UnitKey, list[UnitKey]] = {}
    ready: list[tuple[SortKey, UnitKey]] = []
    for key, deps in needs.items():
        pending[key] = len(deps)
        if not deps:
            ready.append((sort_key(key), key))
        for dep in deps:
            found = users.get(dep)
            if found is None:
                users[dep] = [key]
            else:
                found.append(key)
    heapq.heapify(ready)
    order: list[UnitKey] = []
    while ready:
        key = heapq.heappop(ready)[1]
        order.append(key)
        for user in users.get(key, ()):
            left = pending[user] - 1
            pending[user] = left
            if not left:
                heapq.heappush(ready, (sort_key(user), user))
    return order if len(order) == len(needs) else None


def _components(needs: Mapping[UnitKey, frozenset[UnitKey]]) -> list[list[UnitKey]]:
    """Strongly connected components (iterative Tarjan).

    Membership does not depend on visiting order; callers order components by their keys.
    """
    index: dict[UnitKey, int] = {}
    low: dict[UnitKey, int] = {}
    stack: list[UnitKey] = []
    on_stack: set[UnitKey] = set()
    found: list[list[UnitKey]] = []
    for root in needs:
        if root in index:
            continue
        work: list[tuple[UnitKey, Iterator[UnitKey]]] = [(root, iter(needs[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(needs[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members: list[UnitKey] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                found.append(members)
    return found


_CREATION_HOOKS = frozenset({"__init_subclass__", "__set_name__", "__new__", "__prepare__"})


def runs_at_load(dep: Unit, *, reader: Unit) -> bool:
    """Whether code of ``dep`` runs while ``reader`` executes (so what it calls is needed then).

    A function read at load time is a decorator or a call; a class read by a statement that
    is not a class is instantiated or called; a class with creation hooks
    (``__init_subclass__``, a metaclass' ``__new__``) runs them for every subclass.
    """
    if dep.kind == "def":
        return True
    if dep.kind != "class":
        return False
    return reader.kind != "class" or any(_CREATION_HOOKS & set(c.methods) for c in dep.classes)


class CallClosure:
    """Units reachable through call-time edges (what runs when a unit's functions run).

    Edges of a unit do not depend on the block being resolved, so the sets are kept per
    index (``memo``) and shared by every resolution.
    """

    def __init__(
        self, effects: Mapping[UnitKey, Effect], memo: dict[UnitKey, frozenset[UnitKey]]
    ) -> None:
        self.effects = effects
        self.memo = memo

    def of(self, start: UnitKey) -> frozenset[UnitKey]:
        cached = self.memo.get(start)
        if cached is not None:
            return cached
        seen: set[UnitKey] = set()
        stack = [start]
        while stack:
            key = stack.pop()
            known = self.memo.get(key) if key != start else None
            if known is not None:
                seen |= known
                seen.add(key)
                continue
            effect = self.effects[key]
            for dep in itertools.chain(effect.call, effect.load):
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        seen.discard(start)
        result = frozenset(seen)
        self.memo[start] = result
        return result
