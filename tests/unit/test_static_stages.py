"""The static stages of a validation: the same verdict whatever this process checked before."""

from __future__ import annotations

from typing import cast

import pytest

from nnrag.model import Stage
from nnrag.validate import stages
from nnrag.validate.stages import compiled_statements, static_stages

HELPER = "import torch\n\n\ndef helper(x):\n    return x + 1\n"
MODULE = "\n\nclass {}(torch.nn.Module):\n    def forward(self, x):\n        return {}(x)\n"
GOOD = HELPER + MODULE.format("Good", "helper")
UNBOUND = HELPER + MODULE.format("Bad", "nope")
NO_COMPILE = HELPER + "\n\nreturn 1\n"  # parses; the compiler refuses it
NO_PARSE = HELPER + "\n\nclass Half(torch.nn.Module:\n    pass\n"
FILES = {"good.py": GOOD, "unbound.py": UNBOUND, "compile.py": NO_COMPILE, "parse.py": NO_PARSE}


def verdicts(depth: Stage) -> dict[str, tuple[object, ...]]:
    found: dict[str, tuple[object, ...]] = {}
    for name, code in FILES.items():
        reached, failed, category, message, timings = static_stages(
            code,
            filename=name,
            source_packages=frozenset(),
            depth=depth,
        )
        found[name] = (reached, failed, category, message, sorted(timings))
    return found


@pytest.mark.parametrize("depth", ["parse", "compile", "closed", "forward"])
def test_static_verdicts_do_not_depend_on_the_files_checked_before(
    depth: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files sharing a helper: the second round reuses the statements the first parsed and
    compiled, and every verdict (stage, category, message, timed stages) is the same."""
    monkeypatch.setattr(stages, "_compiled", [])
    first = verdicts(cast(Stage, depth))
    assert any(text.startswith("def helper") for _, text in compiled_statements().statements)
    assert verdicts(cast(Stage, depth)) == first
    if depth == "forward":
        assert first["good.py"] == (
            "closed",
            None,
            None,
            "",
            ["closed", "compile", "parse"],
        )
        assert first["unbound.py"][1:3] == ("closed", "unresolved-name")
        assert first["compile.py"][:3] == ("parse", "compile", "syntax")
        assert first["parse.py"][:3] == (None, "parse", "syntax")


def test_the_statement_memo_is_emptied_past_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stages, "_compiled", [])
    monkeypatch.setattr(stages, "COMPILED_LIMIT", 2)
    memo = compiled_statements()
    static_stages(GOOD, filename="good.py", source_packages=frozenset(), depth="closed")
    assert len(memo.trees) == 3  # the import, the helper, the class
    assert compiled_statements() is not memo
    assert not compiled_statements().trees


def test_a_line_marked_noqa_passes_the_closed_stage_as_in_nnrag_check() -> None:
    """A read the block keeps as the original wrote it (a name bound nowhere, read in a
    branch that may never run) carries ``# noqa: NNR101``: the closed stage honours it as
    ``nnrag check`` does; another code on the line is still reported."""
    marked = HELPER + MODULE.format("Marked", "nope") + ""
    marked = marked.replace("return nope(x)", "return nope(x)  # noqa: NNR101")
    reached, failed, _, _, _ = static_stages(
        marked, filename="marked.py", source_packages=frozenset(), depth="closed"
    )
    assert (reached, failed) == ("closed", None)
    other = marked.replace("# noqa: NNR101", "# noqa: NNR203")
    _, failed, category, _, _ = static_stages(
        other, filename="other.py", source_packages=frozenset(), depth="closed"
    )
    assert (failed, category) == ("closed", "unresolved-name")
