"""The process of one block: confined layer by layer, then the probe runs in it."""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nnrag.validate import isolation, syscalls
from nnrag.validate.frames import BlockRequest, Message, plain, write_frame
from nnrag.validate.lockdown import PR_SET_PDEATHSIG, lock_down, prctl


def block_main(
    request: BlockRequest,
    *,
    tmp: Path,
    result_fd: int,
    stderr_fd: int,
    memory_mb: int,
    disk_mb: int,
    layers: dict[str, bool],
    rules: Any,
    channel: socket.socket | None,
) -> None:
    """Main of the child the server forks for ``request``: :func:`confine`, then the probe."""
    violations, probes = confine(
        tmp,
        timeout_s=request.timeout_s,
        result_fd=result_fd,
        stderr_fd=stderr_fd,
        memory_mb=memory_mb,
        disk_mb=disk_mb,
        layers=layers,
        rules=rules,
        channel=channel,
    )
    from nnrag.validate.probe import runner as probe

    send = sender(result_fd, probes)
    probe.run_block(request.to_plain(), send=send, violations=violations)


def confine(
    tmp: Path,
    *,
    timeout_s: float,
    result_fd: int,
    stderr_fd: int,
    memory_mb: int,
    disk_mb: int,
    layers: dict[str, bool],
    rules: Any,
    channel: socket.socket | None,
) -> tuple[list[str], list[str]]:
    """Confine this forked child; return the lists the audit hook fills (violations, probes).

    In order: own mount namespace (read-only machine, ``tmp`` a tmpfs of ``disk_mb``), no
    capabilities, no inherited descriptor but the result pipe (and ``channel`` until the
    seccomp listener went through it to the server), Landlock, seccomp, then the Python-level
    lockdown (session, environment, rlimits, audit hook).
    """
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if layers.get("namespaces"):
        isolation.confine_mounts(tmp, size_mb=disk_mb)
        isolation.drop_capabilities()
    isolation.close_inherited((result_fd, stderr_fd, *([channel.fileno()] if channel else [])))
    if layers.get("landlock"):
        isolation.apply_landlock(tmp)
    if rules is not None:
        syscalls.load(rules, channel)  # closes the channel
    return lock_down(tmp, timeout_s=timeout_s, memory_mb=memory_mb, stderr_fd=stderr_fd)


def sender(result_fd: int, probes: list[str]) -> Callable[[Message], None]:
    """Frames to the server on ``result_fd``; the result carries the probes the audit hook
    refused (the server decides whether they are notes or the block's violation)."""

    def send(message: Message) -> None:
        if message.get("kind") == "result":
            message = {**message, "probes": list(dict.fromkeys(probes))}
        write_frame(result_fd, plain(message))

    return send


__all__ = ["block_main", "sender"]
