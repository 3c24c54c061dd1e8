"""The search budget: the request's CPU seconds, and a share of its wall-clock timeout."""

from __future__ import annotations

from nnrag.model import SEARCH_CPU_S
from nnrag.validate.probe.budget import TIMEOUT_SHARE, SearchBudget


def test_the_request_sets_the_budget() -> None:
    budget = SearchBudget.of({"search_cpu_s": 5.0, "timeout_s": 10.0})
    assert (budget.cpu_s, budget.wall_s) == (5.0, TIMEOUT_SHARE * 10.0)


def test_a_request_without_one_gets_the_default() -> None:
    assert SearchBudget.of({}).cpu_s == SEARCH_CPU_S


def test_a_fresh_budget_is_not_spent() -> None:
    assert not SearchBudget.of({"search_cpu_s": 1000.0, "timeout_s": 6000.0}).spent()


def test_the_cpu_budget_names_its_option() -> None:
    budget = SearchBudget(cpu_s=0.0, wall_s=1000.0, started_cpu=-1.0)
    assert budget.spent()
    message = budget.message(7)
    assert message.startswith("the constructor/input search used its budget of 0 CPU seconds")
    assert "after 7 attempts (raise it with --nnrag-search-budget" in message


def test_the_timeout_share_names_the_timeout() -> None:
    budget = SearchBudget(cpu_s=1000.0, wall_s=6.0, started_wall=-1e9)
    assert budget.spent()
    assert budget.ended_by == "wall"
    message = budget.message(3)
    assert "share (60%) of the wall-clock timeout, 6 s, after 3 attempts" in message
    assert "raise it with --nnrag-timeout, nnrag validate --timeout" in message
