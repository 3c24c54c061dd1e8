"""The imports of a module-level ``try`` that never bind (nnrag.extract.deadtry)."""

from __future__ import annotations

import ast
import textwrap

from nnrag.extract.deadtry import dead_imports
from nnrag.index.units import analyze_module
from nnrag.model import ImportBinding, ModuleInfo


def _dead(text: str, *, absent: str = "gone", internal: str = "pkg") -> set[tuple[int, str]]:
    """The dead bindings of the first ``try`` unit of ``text`` (``absent``: the name whose
    import always raises; ``internal``: the package of the sources)."""
    source = textwrap.dedent(text)
    info = analyze_module(
        source="src",
        module="pkg.model",
        path="pkg/model.py",
        data=source.encode(),
        is_package=False,
    )
    assert isinstance(info, ModuleInfo)
    unit = next(u for u in info.units if u.kind == "try")
    lines = source.splitlines(keepends=True)[unit.start_line - 1 : unit.end_line]
    tree = ast.parse("".join(lines))

    def is_absent(binding: ImportBinding) -> bool:
        return binding.attr == absent

    def is_internal(binding: ImportBinding) -> bool:
        return binding.module.split(".")[0] == internal

    return set(dead_imports(tree, unit, is_absent, is_internal))


def test_imports_after_the_raise_and_before_it_rebound_by_the_handler_are_dead() -> None:
    found = _dead(
        """
        try:
            from pkg.a import A
            from pkg.b import B, gone, C
            from pkg.c import D
        except ImportError:
            A = B = None
            gone = C = D = None
        """
    )
    assert found == {(3, "A"), (4, "B"), (4, "C"), (5, "D")}


def test_nothing_is_dead_when_the_body_can_succeed() -> None:
    assert not _dead(
        """
        try:
            from pkg.a import A
        except ImportError:
            A = None
        """
    )


def test_before_the_raise_only_internal_imports_the_handler_rebinds_are_dead() -> None:
    found = _dead(
        """
        try:
            import numpy
            from pkg.a import A
            from pkg.a import Kept
            from pkg.b import gone
        except ImportError:
            numpy = A = gone = None
        """
    )
    assert found == {(4, "A")}  # numpy: external (side effects); Kept: not rebound


def test_a_handler_that_does_not_catch_import_error_rebinds_nothing() -> None:
    found = _dead(
        """
        try:
            from pkg.a import A
            from pkg.b import gone
            from pkg.c import D
        except KeyError:
            A = gone = D = None
        """
    )
    assert found == {(5, "D")}  # after the raise: never runs, whatever the handler
