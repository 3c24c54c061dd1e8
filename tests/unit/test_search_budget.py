"""The search budget: the request's CPU seconds, capped by a share of its wall-clock timeout."""

from __future__ import annotations

from nnrag.model import SEARCH_CPU_S
from nnrag.validate.probe.budget import SEARCH_KNOB, TIMEOUT_KNOB, TIMEOUT_SHARE, SearchBudget


def test_the_request_sets_the_budget() -> None:
    budget = SearchBudget.of({"search_cpu_s": 5.0, "timeout_s": 60.0})
    assert (budget.seconds, budget.knob) == (5.0, SEARCH_KNOB)
    assert "raise it with --nnrag-search-budget" in budget.message(3)


def test_a_request_without_one_gets_the_default() -> None:
    assert SearchBudget.of({}).seconds == min(SEARCH_CPU_S, TIMEOUT_SHARE * 60.0)


def test_a_short_timeout_caps_the_budget_and_is_named() -> None:
    budget = SearchBudget.of({"search_cpu_s": 100.0, "timeout_s": 10.0})
    assert (budget.seconds, budget.knob) == (TIMEOUT_SHARE * 10.0, TIMEOUT_KNOB)
    message = budget.message(7)
    assert message.startswith("the constructor/input search used its budget of 6 CPU seconds")
    assert "after 7 attempts" in message
    assert "raise it with --nnrag-timeout, nnrag validate --timeout" in message


def test_a_fresh_budget_is_not_spent() -> None:
    assert not SearchBudget.of({"search_cpu_s": 1000.0, "timeout_s": 6000.0}).spent()
