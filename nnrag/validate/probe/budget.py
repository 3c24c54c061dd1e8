"""The constructor/input search's budget, counted in the sandbox child's CPU time."""

from __future__ import annotations

import contextlib
import math
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from nnrag.model import SEARCH_CPU_S

TIMEOUT_SHARE = 0.6
"""Share of the wall-clock timeout the search may use at most, so that a search the machine's
load slowed down still ends with its own last error before the timeout kills the block."""

SEARCH_KNOB = "--nnrag-search-budget, nnrag validate --search-budget"
KILL_GRACE_S = 5.0
"""CPU seconds past the budget the kernel's CPU-time limit leaves an operation that does not
return to Python (where the budget's interrupt would stop it) before it ends the child."""
BUDGET_KILL = "budget"
"""The kind of the child's message that says a kill on the CPU-time limit is the budget's
(``cpu_s``: the budget) or no longer is (``cpu_s``: ``None``)."""
TIMEOUT_KNOB = "--nnrag-timeout, nnrag validate --timeout"


class SearchInterrupted(BaseException):
    """Raised in the search's thread when its CPU budget ran out during an attempt (a
    ``BaseException``: the block's own ``except Exception`` does not swallow it)."""


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

    @contextlib.contextmanager
    def interrupting(
        self, enabled: bool = True, announce: Callable[[dict[str, Any]], None] | None = None
    ) -> Iterator[None]:
        """Within the block, an attempt still running when the budget is used up is stopped:
        :class:`SearchInterrupted` is raised where it runs (``ITIMER_PROF``: this process's CPU
        time, the clock of :meth:`used`), so no attempt outlasts the budget and a slow block
        costs its budget, not the whole wall-clock timeout. One operation that does not return
        to Python in time (a huge convolution) cannot be interrupted: the CPU-time limit
        (``RLIMIT_CPU``) is lowered to :data:`KILL_GRACE_S` past the budget, so the kernel ends
        the child (``SIGXCPU``); ``announce`` tells the parent so (:data:`BUDGET_KILL`). Off
        when not ``enabled``."""
        if not enabled:
            yield
            return

        def interrupt(signum: int, frame: object) -> None:
            self.ended_by = "cpu"
            raise SearchInterrupted(f"still running when the {self.cpu_s:g} CPU seconds ran out")

        previous = signal.signal(signal.SIGPROF, interrupt)
        remaining = max(self.cpu_s - self.used(), 0.001)
        _lower_cpu_limit(time.process_time() + remaining + KILL_GRACE_S)
        if announce is not None:
            announce({"kind": BUDGET_KILL, "cpu_s": self.cpu_s})
        signal.setitimer(signal.ITIMER_PROF, remaining)
        try:
            yield
        finally:
            stop_interrupting(announce)
            signal.signal(signal.SIGPROF, previous)

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


def stop_interrupting(announce: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Disarm :meth:`SearchBudget.interrupting`'s timer and give the CPU-time limit back (before
    a result is sent: the reply is never cut short; the stages after the search have the
    timeout); ``announce``: tell the parent a kill on the CPU-time limit is no longer the
    budget's."""
    signal.setitimer(signal.ITIMER_PROF, 0)
    if _lowered:
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, _lowered.pop())
        if announce is not None:
            announce({"kind": BUDGET_KILL, "cpu_s": None})


_lowered: list[tuple[int, int]] = []
"""The child's CPU-time limit before :func:`_lower_cpu_limit` lowered it (one at most)."""


def _lower_cpu_limit(cpu_s: float) -> None:
    """Lower the soft ``RLIMIT_CPU`` of this process to ``cpu_s`` (whole seconds, up)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = math.ceil(cpu_s)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft == resource.RLIM_INFINITY or limit < soft:
        _lowered[:] = [(soft, hard)]
        resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))


def uninterrupted(send: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``send`` with the budget's interrupt held back while it writes (a message to the
    sandbox's parent is written whole; the interrupt is raised after it)."""

    def whole(message: dict[str, Any]) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
        try:
            send(message)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGPROF})

    return whole
