"""Annotations: evaluated in the enclosing scope, never evaluated for locals."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections import OrderedDict

T = int


class Typed:
    field: T
    other: "OrderedDict[str, int]" = None
    bare: Unknown  # noqa: F821

    def method(self, arg: T, *rest: T, key: T = 0, **kw: T) -> T:
        local: Missing = arg  # noqa: F821
        only: Declared  # noqa: F821
        (paren): Parenthesized = 1  # noqa: F821
        return local


def deco(fn):
    return fn


@deco
def decorated(x: T = T) -> list[T]:
    return [x]
