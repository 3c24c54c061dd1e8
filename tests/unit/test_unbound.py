"""The guard of a class definition, and the failed import that was a name's only binding,
read from a block file's AST."""

from __future__ import annotations

import textwrap

from nnrag.validate.unbound import class_guard, failed_import, unbound_message

TEXT = textwrap.dedent(
    """
    import torch

    if torch.__version__ >= "1.7":
        pass
    else:
        class Old:
            pass

    try:
        import fast
        class Quick:
            pass
    except (ImportError, OSError):
        class Slow:
            pass

    with open("x") as f:
        class Opened:
            pass

    def make():
        class Inner:
            pass
    """
)


def test_the_innermost_guard_of_each_definition_says_when_it_runs() -> None:
    assert class_guard(TEXT, "Old") == (7, "when `torch.__version__ >= '1.7'` (line 4) is false")
    assert class_guard(TEXT, "Quick") == (
        12,
        "when the body of the `try:` (line 10) runs up to it without raising",
    )
    assert class_guard(TEXT, "Slow") == (
        15,
        "when the body of the `try:` (line 10) raises (ImportError, OSError)",
    )
    assert class_guard(TEXT, "Opened") == (19, "when the `with` block (line 18) runs its body")


def test_a_class_inside_a_function_or_nowhere_is_not_found() -> None:
    assert class_guard(TEXT, "Inner") is None
    assert class_guard(TEXT, "Missing") is None
    assert unbound_message(TEXT, "Missing", None) is None


def test_the_message_names_the_class_its_line_the_condition_and_the_fix() -> None:
    message = unbound_message(TEXT, "Old", None)
    assert message == (
        "Old is defined at line 7 of the block file only when `torch.__version__ >= '1.7'` "
        "(line 4) is false, which was not the case when the file was imported here, so the "
        "file leaves it unbound: run the block where that condition holds, or exclude it "
        "with repos.json `exclude`"
    )


OPTIONAL = textwrap.dedent(
    """
    import json

    try:
        from nnrag_absent_package.basis import Basis
        import nnrag_absent_package.grid as grid
    except ModuleNotFoundError:
        print("install nnrag_absent_package")

    try:
        from json import Basis as Other
    except ImportError:
        Other = None

    from json import dumps
    TABLE = {"basis": Basis}
    """
)


def _undefined(name: str) -> NameError:
    return NameError(f"name {name!r} is not defined")


def test_a_name_bound_only_by_an_import_that_cannot_be_found_says_which_and_what_to_install() -> (
    None
):
    assert failed_import(OPTIONAL, _undefined("Basis"), frozenset()) == (
        "`Basis` is bound only by `from nnrag_absent_package.basis import Basis` (line 5 of "
        "the block file), and no package 'nnrag_absent_package' is installed here, so that "
        "import failed and left it unbound: install the package that provides "
        "'nnrag_absent_package', or exclude the block"
    )
    assert "`import nnrag_absent_package.grid as grid`" in str(
        failed_import(OPTIONAL, _undefined("grid"), frozenset())
    )


def test_a_name_with_another_binding_an_installed_module_or_a_source_package_is_not_explained() -> (
    None
):
    assert failed_import(OPTIONAL, _undefined("Other"), frozenset()) is None  # the handler binds it
    assert failed_import(OPTIONAL, _undefined("dumps"), frozenset()) is None  # json is installed
    assert failed_import(OPTIONAL, _undefined("Basis"), frozenset({"nnrag_absent_package"})) is None
    assert failed_import(OPTIONAL, _undefined("Nowhere"), frozenset()) is None
    not_a_name_error = AttributeError("name 'Basis' is not defined")
    assert failed_import(OPTIONAL, not_a_name_error, frozenset()) is None
