"""Sandbox child: ordered rule tables (a pattern and its answer; the first match decides)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

C = TypeVar("C")
"""What a table's rules are given beside their match (the inputs tried, a size profile)."""

NO_MATCH = object()
"""A rule's answer when the text is not its kind after all (the next rule is asked); ``None``
is its kind, but no answer."""

Answer = Callable[["re.Match[str]", C], object]


@dataclass(frozen=True, slots=True)
class Rule(Generic[C]):
    """One rule: the pattern its text must contain, and the answer it gives then."""

    pattern: re.Pattern[str]
    answer: Answer[C]


class Rules(Generic[C]):
    """An ordered table of rules, filled with :meth:`rule` in the order the rules are
    written; :meth:`first` asks them in that order and the first that answers decides."""

    def __init__(self) -> None:
        self.rules: list[Rule[C]] = []

    @classmethod
    def of(cls, *rules: tuple[str, Answer[C]]) -> Rules[C]:
        """A table of ``(pattern, answer)`` pairs, in that order."""
        table: Rules[C] = cls()
        for pattern, answer in rules:
            table.rule(pattern)(answer)
        return table

    def rule(self, pattern: str, flags: int = 0) -> Callable[[Answer[C]], Answer[C]]:
        """Decorator: add the function as the next rule, asked when ``pattern`` is found."""

        def add(answer: Answer[C]) -> Answer[C]:
            self.rules.append(Rule(re.compile(pattern, flags), answer))
            return answer

        return add

    def first(self, text: str, context: C) -> object:
        """The first answer other than :data:`NO_MATCH` of a rule whose pattern ``text``
        contains, else :data:`NO_MATCH`."""
        for rule in self.rules:
            found = rule.pattern.search(text)
            if found is None:
                continue
            answer = rule.answer(found, context)
            if answer is not NO_MATCH:
                return answer
        return NO_MATCH


__all__ = ["NO_MATCH", "Rule", "Rules"]
