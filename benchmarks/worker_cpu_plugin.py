"""pytest plugin for measurements: each process's CPU, peak RSS and cyclic-GC pauses.

``-p worker_cpu_plugin`` (this folder on ``PYTHONPATH``); each process (the controller and
every xdist worker) appends one line to the file ``$NNRAG_CPU_LOG`` at the end of the
session: ``worker cpu=S maxrss_mb=M gc_cpu={generation: (collections, CPU s)}``.
"""

from __future__ import annotations

import gc
import os
import resource
import time
from typing import Any

import pytest

_PAUSES: dict[int, list[float]] = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
_STARTED = [0.0]


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _STARTED[0] = time.process_time()
        return
    pause = _PAUSES[info["generation"]]
    pause[0] += 1
    pause[1] += time.process_time() - _STARTED[0]


gc.callbacks.append(_on_collection)


def pytest_sessionfinish(session: pytest.Session) -> None:
    who = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    pauses = {k: (int(v[0]), round(v[1], 2)) for k, v in _PAUSES.items()}
    line = (
        f"{who} cpu={usage.ru_utime + usage.ru_stime:.1f} "
        f"maxrss_mb={usage.ru_maxrss // 1024} gc_cpu={pauses}\n"
    )
    with open(os.environ["NNRAG_CPU_LOG"], "a", encoding="utf-8") as log:
        log.write(line)
