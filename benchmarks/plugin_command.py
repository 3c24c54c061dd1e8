"""The pytest command line of one nnrag plugin run, shared by the benchmarks that start one."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path


def plugin_command(repos: Path, cache: Path, report: Path, *extra: str) -> list[str]:
    """``python -m pytest`` on ``repos`` with its own ``cache`` and JSON ``report`` (pytest's
    own cache off, quiet), then ``extra`` arguments (``-n``, ``--nnrag-depth``, ...)."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--nnrag-repos={repos}",
        f"--nnrag-cache={cache}",
        f"--nnrag-report={report}",
        *extra,
    ]


__all__: Sequence[str] = ["plugin_command"]
