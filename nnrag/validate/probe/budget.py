"""The constructor/input search's budget, counted in the sandbox child's CPU time."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nnrag.model import SEARCH_CPU_S

TIMEOUT_SHARE = 0.6
"""Share of the wall-clock timeout the search may use at most, so that a block whose search
ends still has time to report its verdict before the timeout."""

SEARCH_KNOB = "--nnrag-search-budget, nnrag validate --search-budget"
TIMEOUT_KNOB = "--nnrag-timeout, nnrag validate --timeout"


@dataclass(slots=True)
class SearchBudget:
    """CPU seconds the search may use, on ``time.process_time``: the child's own CPU time
    (every thread of it; torch runs one intra-op thread in the sandbox), not the time it
    waits for a core, so a verdict does not depend on how loaded the machine is. The same
    clock as the sandbox's ``RLIMIT_CPU``; the wall-clock timeout stays the outer guard."""

    seconds: float
    knob: str
    """The options that raise this budget (named in the failure)."""
    started: float = field(default_factory=time.process_time)

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> SearchBudget:
        """The request's ``search_cpu_s``, capped at a share of its ``timeout_s``."""
        asked = float(request.get("search_cpu_s", SEARCH_CPU_S))
        share = TIMEOUT_SHARE * float(request.get("timeout_s", 60.0))
        if share < asked:
            return cls(share, TIMEOUT_KNOB)
        return cls(asked, SEARCH_KNOB)

    def used(self) -> float:
        """CPU seconds used since the budget was made."""
        return time.process_time() - self.started

    def spent(self) -> bool:
        return self.used() > self.seconds

    def message(self, attempts: int) -> str:
        """What the failure says when the search ended on this budget: which, and the fix."""
        raise_it = f"raise it with {self.knob}"
        if self.knob == TIMEOUT_KNOB:
            raise_it += f": the search gets {TIMEOUT_SHARE:.0%} of the timeout"
        return (
            f"the constructor/input search used its budget of {self.seconds:g} CPU seconds "
            f"after {attempts} attempts ({raise_it}); the last error"
        )
