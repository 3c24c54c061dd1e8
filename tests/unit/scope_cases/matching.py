"""Structural pattern matching binds names in the enclosing scope."""

import enum


class Color(enum.Enum):
    RED = 1


def describe(value):
    match value:
        case {"kind": kind, **others}:
            return kind, others
        case [first, *tail]:
            return first, tail
        case Color.RED as red:
            return red
        case (int() | float()) as number if number > 0:
            return number
        case _:
            return None


match describe(1):
    case [top, *_]:
        module_capture = top
    case other:
        module_capture = other
