"""Advisory closure problems are named as the cause only of failures they can explain."""

from __future__ import annotations

from nnrag.diagnostics import closure_problem
from nnrag.model import ValidationResult
from nnrag.validate.stages import blame_advisory_problems

TEMPLATES = closure_problem(
    "resource-file",
    "reads a file next to its module",
    where="a.py:1:1",
    dependency_path=("Conv", "MessagePassing"),
)
REGISTRY = closure_problem(
    "dynamic-registry",
    "looks up '_models' with a key",
    where="b.py:2:1",
    dependency_path=("Net", "create"),
)


def failed(message: str, category: str = "runtime-error") -> ValidationResult:
    return ValidationResult(
        block_id="s:m:Conv",
        depth="forward",
        stage_reached="instantiate",
        failed_stage="forward",
        category=category,  # type: ignore[arg-type]  # a category string from the test table (a Category literal)
        message=message,
    )


def test_a_file_error_is_blamed_on_the_missing_resource() -> None:
    result = blame_advisory_problems(
        failed("FileNotFoundError: [Errno 2] No such file or directory: 'x.jinja'"),
        (REGISTRY, TEMPLATES),
    )
    assert result.category == "resource-file"
    assert "likely cause" in result.message
    assert result.dependency_path == TEMPLATES.dependency_path


def test_a_failed_lookup_is_blamed_on_the_registry() -> None:
    result = blame_advisory_problems(failed("KeyError: 'resnet'"), (TEMPLATES, REGISTRY))
    assert result.category == "dynamic-registry"


def test_an_unrelated_failure_keeps_its_category() -> None:
    plain = failed("RuntimeError: mat1 and mat2 shapes cannot be multiplied (10x4 and 8x8)")
    assert blame_advisory_problems(plain, (TEMPLATES, REGISTRY)) == plain
    shape = failed("KeyError: 'x'", category="input-shape")
    assert blame_advisory_problems(shape, (REGISTRY,)) == shape


def test_a_missing_attribute_of_a_value_is_not_a_registry_lookup() -> None:
    """``'tuple' object has no attribute 'detach'`` is about a value; a module or class
    namespace looked up by name can be the registry's."""
    value = failed("AttributeError: 'tuple' object has no attribute 'detach'")
    assert blame_advisory_problems(value, (REGISTRY,)) == value
    namespace = failed("AttributeError: module 'pkg.models' has no attribute 'resnet'")
    assert blame_advisory_problems(namespace, (REGISTRY,)).category == "dynamic-registry"
