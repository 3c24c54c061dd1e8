"""The probe's rule tables: order, first match, and the name tables' values (no torch)."""

from __future__ import annotations

import re

from nnrag.validate.probe.profiles import (
    FLOAT_RULES,
    INT_RULES,
    MISSING,
    PROFILES,
    float_for,
    int_for,
)
from nnrag.validate.probe.rules import NO_MATCH, Rules


def _table() -> Rules[list[str]]:
    table: Rules[list[str]] = Rules()

    @table.rule(r"size (\d+)")
    def size(m: re.Match[str], seen: list[str]) -> object:
        seen.append("size")
        return int(m.group(1)) if int(m.group(1)) > 1 else NO_MATCH  # not its kind after all

    @table.rule(r"size|shape")
    def word(m: re.Match[str], seen: list[str]) -> object:
        seen.append("word")
        return None  # its kind, no fix: decides

    @table.rule(r"shape")
    def never(m: re.Match[str], seen: list[str]) -> object:
        seen.append("never")
        return "late"

    return table


def test_rules_answer_in_the_order_written_and_the_first_answer_decides() -> None:
    table = _table()
    seen: list[str] = []
    assert table.first("wrong size 7", seen) == 7
    assert seen == ["size"]
    seen.clear()
    assert table.first("wrong size 1", seen) is None  # NO_MATCH passes to the next rule
    assert seen == ["size", "word"]
    seen.clear()
    assert table.first("wrong shape", seen) is None  # ``None`` decides: "never" is not asked
    assert seen == ["word"]
    assert table.first("nothing here", []) is NO_MATCH


def test_rules_of_pairs_keeps_their_order() -> None:
    table: Rules[int] = Rules.of((r"a", lambda m, n: n), (r"a|b", lambda m, n: -n))
    assert [r.pattern.pattern for r in table.rules] == ["a", "a|b"]
    assert table.first("xa", 3) == 3
    assert table.first("xb", 3) == -3


def test_name_tables_size_parameters_by_name_for_a_profile() -> None:
    small, wide = PROFILES[0], PROFILES[1]
    assert int_for("num_heads", small) == small.heads
    assert int_for("head_dim", wide) == wide.dim // wide.heads
    assert int_for("in_channels", small) == small.dim
    assert int_for("hidden_features", wide) == wide.hidden
    assert int_for("num_classes", small) == 10
    assert int_for("spatial_dims", small) == 2  # before the "dim" rule
    assert int_for("num_layers", small) == 1  # "layers$" before "^num_"
    assert int_for("levels", small) == 1  # a tree's depth: one level, not a width
    assert int_for("num_levels", small) == 2
    assert int_for("zzz", small) is MISSING
    assert float_for("drop_path_rate") == 0.0
    assert float_for("layer_scale_init") == 1.0
    assert float_for("eps") == 1e-5
    assert float_for("zzz") == 0.5  # no rule knows it
    assert len(INT_RULES.rules) == 25
    assert len(FLOAT_RULES.rules) == 6
