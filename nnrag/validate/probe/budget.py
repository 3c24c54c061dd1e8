"""The constructor/input search's budget, counted in the sandbox child's CPU time."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nnrag.model import SEARCH_CPU_S

TIMEOUT_SHARE = 0.6
"""Share of the wall-clock timeout the search may use at most, so that a search the machine's
load slowed down still ends with its own last error before the timeout kills the block."""

SEARCH_KNOB = "--nnrag-search-budget, nnrag validate --search-budget"
TIMEOUT_KNOB = "--nnrag-timeout, nnrag validate --timeout"


@dataclass(slots=True)
class SearchBudget:
    """CPU seconds the search may use, on ``time.process_time``: the child's own CPU time
    (every thread of it; torch runs one intra-op thread in the sandbox), not the time it
    waits for a core, so a verdict does not depend on how loaded the machine is. The same
    clock as the sandbox's ``RLIMIT_CPU``. A share of the wall-clock timeout stays the outer
    guard (a search the load slowed that far would be killed by the timeout anyway)."""

    cpu_s: float
    wall_s: float
    started_cpu: float = field(default_factory=time.process_time)
    started_wall: float = field(default_factory=time.monotonic)
    ended_by: str = ""
    """``"cpu"`` or ``"wall"`` once :meth:`spent` said so."""

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> SearchBudget:
        """The request's ``search_cpu_s``, and its share of the request's ``timeout_s``."""
        return cls(
            cpu_s=float(request.get("search_cpu_s", SEARCH_CPU_S)),
            wall_s=TIMEOUT_SHARE * float(request.get("timeout_s", 60.0)),
        )

    def used(self) -> float:
        """CPU seconds used since the budget was made."""
        return time.process_time() - self.started_cpu

    def spent(self) -> bool:
        if not self.ended_by and self.used() > self.cpu_s:
            self.ended_by = "cpu"
        elif not self.ended_by and time.monotonic() - self.started_wall > self.wall_s:
            self.ended_by = "wall"
        return bool(self.ended_by)

    def message(self, attempts: int) -> str:
        """What the failure says when the search ended on this budget: which, and the fix."""
        if self.ended_by == "wall":
            return (
                f"the constructor/input search ran out of its share ({TIMEOUT_SHARE:.0%}) of "
                f"the wall-clock timeout, {self.wall_s:g} s, after {attempts} attempts and "
                f"{self.used():.1f} of its {self.cpu_s:g} CPU seconds (a loaded machine; "
                f"raise it with {TIMEOUT_KNOB}); the last error"
            )
        return (
            f"the constructor/input search used its budget of {self.cpu_s:g} CPU seconds "
            f"after {attempts} attempts (raise it with {SEARCH_KNOB}); the last error"
        )
