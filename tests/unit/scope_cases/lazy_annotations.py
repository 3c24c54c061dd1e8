"""PEP 563: annotations are strings, the compiler does not record their names."""

from __future__ import annotations

import typing

Alias = typing.List


class Node:
    parent: Node | None
    children: Alias[Node]

    def add(self, child: Node, *, where: Position = None) -> Node:  # noqa: F821
        kept: Kept = child  # noqa: F821
        return kept


def free(x: Outer) -> Result:  # noqa: F821
    y: Local = x  # noqa: F821

    def inner(z: y) -> x:
        return z

    return inner
