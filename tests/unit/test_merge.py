"""Three-way merge of block bodies, one top-level statement at a time (pure logic)."""

from __future__ import annotations

import textwrap

import pytest

from nnrag.blockfile.merge import chunks, merge3
from nnrag.check.static import definition_digests

BASE = textwrap.dedent(
    """\
    import torch
    from torch import nn


    # from pkg.helpers
    def act(x):
        return torch.relu(x)


    LIMIT = 4


    # from pkg.layers
    class Block(nn.Module):
        def forward(self, x):
            return act(x)


    __all__ = ["Block"]
    """
)


def edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text
        text = text.replace(old, new)
    return text


def test_chunks_join_back_to_the_body_and_name_each_statement() -> None:
    found = chunks(BASE)
    assert found is not None
    assert "".join(c.text for c in found) == BASE
    assert [c.key for c in found] == [
        "import torch",
        "from torch import nn",
        "def act",
        "= LIMIT",
        "class Block",
        "= __all__",
    ]
    assert found[2].text.lstrip("\n").startswith("# from pkg.helpers\ndef act")
    assert chunks("def broken(:\n") is None


def test_trivial_merges() -> None:
    theirs = edit(BASE, ("torch.relu(x)", "torch.relu(x) * 2"))
    assert merge3(BASE, BASE, theirs).text == theirs
    assert merge3(BASE, theirs, BASE).text == theirs
    assert merge3(BASE, theirs, theirs).text == theirs
    assert merge3(BASE, BASE, theirs).taken == ("act",)


@pytest.mark.parametrize("digests", [False, True], ids=["base-text", "base-digests"])
def test_both_sides_change_different_definitions(digests: bool) -> None:
    mine = edit(
        BASE,
        ("return act(x)", "return act(x) + 1  # mine"),
        ("import torch\n", "import math\nimport torch\n"),
        ("\n\n__all__", "\n\ndef mine():\n    return math.pi\n\n\n__all__"),
    )
    theirs = edit(BASE, ("torch.relu(x)", "torch.relu(x) * 2"), ("LIMIT = 4", "LIMIT = 8"))
    base = definition_digests(BASE) if digests else BASE
    merged = merge3(base, mine, theirs, digests=definition_digests)
    assert merged.clean
    assert merged.taken == ("act", "LIMIT")
    assert merged.text == edit(
        theirs,
        ("return act(x)", "return act(x) + 1  # mine"),
        ("import torch\n", "import math\nimport torch\n"),
        ("\n\n__all__", "\n\ndef mine():\n    return math.pi\n\n\n__all__"),
    )


@pytest.mark.parametrize("digests", [False, True], ids=["base-text", "base-digests"])
def test_conflicts_are_named_and_keep_the_users_version(digests: bool) -> None:
    mine = edit(BASE, ("return act(x)", "return act(x) + 1"), ("LIMIT = 4", "LIMIT = 5"))
    theirs = edit(BASE, ("return act(x)", "return act(x) - 1"), ("LIMIT = 4", "LIMIT = 6"))
    base = definition_digests(BASE) if digests else BASE
    merged = merge3(base, mine, theirs, digests=definition_digests)
    assert merged.conflicts == ("LIMIT", "Block")
    assert not merged.clean
    assert "return act(x) + 1" in merged.text
    assert "LIMIT = 5" in merged.text


def test_removals_follow_the_side_that_removed() -> None:
    no_limit = edit(BASE, ("LIMIT = 4\n\n\n", ""))
    # upstream removed a definition the user did not touch: removed
    assert (
        "LIMIT"
        not in merge3(BASE, edit(BASE, ("x)\n\n\n__all__", "x)  # m\n\n\n__all__")), no_limit).text
    )
    # the user removed one upstream did not touch: stays removed
    theirs = edit(BASE, ("torch.relu(x)", "torch.relu(x) * 2"))
    assert "LIMIT" not in merge3(BASE, no_limit, theirs).text
    # upstream removed one the user changed: a conflict
    mine = edit(BASE, ("LIMIT = 4", "LIMIT = 5"))
    assert merge3(BASE, mine, no_limit).conflicts == ("LIMIT",)


def test_with_digests_a_statement_on_one_side_only_is_kept() -> None:
    mine = edit(BASE, ("import torch\n", "import torch\nimport numpy\n"))
    theirs = edit(BASE, ("from torch import nn\n", "from torch import Tensor, nn\n"))
    merged = merge3(definition_digests(BASE), mine, theirs, digests=definition_digests)
    assert merged.clean
    assert "import numpy\n" in merged.text
    assert "from torch import Tensor, nn\n" in merged.text


def test_a_body_that_does_not_parse_is_one_conflict() -> None:
    merged = merge3(BASE, BASE + "def broken(:\n", edit(BASE, ("LIMIT = 4", "LIMIT = 8")))
    assert merged.conflicts == ("the whole file (it does not parse)",)
