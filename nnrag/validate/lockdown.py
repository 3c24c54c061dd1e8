"""Locks a sandbox child down: session, environment, rlimits and an audit hook."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, SupportsIndex

from nnrag.validate.refusals import (
    PROBE_EVENTS,
    REFUSED_ERRNO,
    DecidedByViolation,
    family_name,
    library_import,
)
from nnrag.validate.syscalls import MAX_TASKS, guarded_proc_owner

PR_SET_PDEATHSIG = 1
ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONHASHSEED", "SYSTEMROOT")
"""Environment variables a block may see; everything else (tokens, credentials) is dropped."""
_OUTPUT_LIMIT = 64 * 1024 * 1024
_WRITE_EVENTS = {
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.symlink",
    "os.link",
    "os.truncate",
    "os.chmod",
    "os.chown",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
_DIR_FD_ARG = {  # audit event -> index of the dir_fd argument for its first and second path
    "os.remove": (1, None),
    "os.rmdir": (1, None),
    "os.mkdir": (2, None),
    "os.chmod": (2, None),
    "os.chown": (3, None),
    "os.utime": (3, None),
    "os.symlink": (None, 2),
    "os.rename": (2, 3),
    "os.link": (2, 3),
}
_PROCESS_PREFIXES = ("subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "pty.")
_PROCESS_EVENTS = {"os.system", "os.fork", "os.forkpty", "os.startfile"}
"""Starting a process: a violation, unless a library's own import makes it (a probe)."""
_REFUSED_PREFIXES = ("socket.",)


def prctl(option: int, value: int) -> None:
    """Linux ``prctl(2)``; a no-op where libc has none."""
    call = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)
    if call is not None:
        call(option, value)


def lock_down(
    tmp: Path, *, timeout_s: float, memory_mb: int, stderr_fd: int | None = None
) -> tuple[list[str], list[str]]:
    """Lock this (child) process down inside ``tmp``; return the lists the audit hook fills.

    New session, parent-death signal, working folder and HOME in ``tmp``, an environment
    reduced to :data:`ENV_ALLOW`, stdio redirected (stderr to ``stderr_fd`` or
    ``tmp/stderr.txt``), rlimits, and an audit hook that refuses network, processes and writes
    outside ``tmp``. Each refusal is appended to the first list (violations) or, for a probe
    (:mod:`nnrag.validate.refusals`), to the second.
    """
    with contextlib.suppress(OSError):  # already a session leader when spawned
        os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.chdir(tmp)
    environ = {k: v for k, v in os.environ.items() if k in ENV_ALLOW}
    os.environ.clear()
    os.environ.update(environ)
    os.environ.update(HOME=str(tmp), TMPDIR=str(tmp), CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    tempfile.tempdir = str(tmp)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    if stderr_fd is None:
        stderr_fd = os.open(tmp / "stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    if stderr_fd != 2:
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
    os.close(devnull)
    import faulthandler

    faulthandler.enable()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    set_limits(timeout_s, memory_mb)
    sys.dont_write_bytecode = True
    violations: list[str] = []
    probes: list[str] = []
    sys.addaudithook(audit_hook(tmp, violations, os.getpid(), probes=probes))
    time.sleep = sleep_until_violation(violations, time.sleep)
    return violations, probes


def sleep_until_violation(
    violations: list[str], sleep: Callable[[float | SupportsIndex], None]
) -> Callable[[float | SupportsIndex], None]:
    """``time.sleep`` for the child: a sleep after a violation raises
    :class:`~nnrag.validate.refusals.DecidedByViolation` (a retry loop with a back-off, as a
    model hub client runs offline, would wait on what the sandbox refused for ever; the
    violation already decided the verdict). Python has no audit event for a sleep before
    3.12, so the module's function is replaced in the child (and only there)."""

    def guarded(seconds: float | SupportsIndex) -> None:
        if violations:
            raise DecidedByViolation(f"slept after the sandbox refused {violations[-1]}")
        sleep(seconds)

    return guarded


def set_limits(timeout_s: float, memory_mb: int) -> None:
    """CPU time, file size, open files, address space (or data) and process-count limits."""
    import resource

    cpu = int(timeout_s) + 5
    limits = [
        (resource.RLIMIT_CPU, cpu, cpu + 5),
        (resource.RLIMIT_FSIZE, _OUTPUT_LIMIT, _OUTPUT_LIMIT),
        (resource.RLIMIT_NOFILE, 1024, 1024),
    ]
    try:
        vm_kb = int(
            next(
                line.split()[1]
                for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmSize:")
            )
        )
        limit = vm_kb * 1024 + memory_mb * 1024 * 1024
        limits.append((resource.RLIMIT_AS, limit, limit))
    except (OSError, StopIteration):
        limit = memory_mb * 1024 * 1024
        limits.append((resource.RLIMIT_DATA, limit, limit))
    if os.path.isdir("/proc"):
        running = sum(1 for entry in os.listdir("/proc") if entry.isdigit())
        allowed = running + MAX_TASKS + 16  # above the seccomp count, which names the excess
        limits.append((resource.RLIMIT_NPROC, allowed, allowed))
    for kind, want_soft, want_hard in limits:
        try:
            _, old_hard = resource.getrlimit(kind)
            hard = want_hard if old_hard == resource.RLIM_INFINITY else min(want_hard, old_hard)
            resource.setrlimit(kind, (min(want_soft, hard), hard))
        except (ValueError, OSError):
            pass


def audit_hook(
    tmp: Path, violations: list[str], pid: int, *, probes: list[str] | None = None
) -> Callable[[str, tuple[Any, ...]], None]:
    """An audit hook refusing network, processes, signals to others and writes outside ``tmp``.

    A refused operation raises ``PermissionError`` with ``EPERM`` (what the kernel answers)
    and is appended to ``violations``, or to ``probes`` when it is a probe (a non-unix socket).
    """
    root = str(tmp)
    noted = violations if probes is None else probes

    def inside(path: object, dir_fd: object = None) -> bool:
        """Whether ``path`` (relative to ``dir_fd`` or the real working folder) is in ``tmp``."""
        if isinstance(path, int):
            return True
        try:
            text = os.fsdecode(path)  # type: ignore[arg-type]  # an audit-hook path: str, bytes or PathLike; TypeError otherwise
        except TypeError:
            return False
        if not os.path.isabs(text):
            try:  # the working folder the kernel will use, not the one the block started in
                use_fd = isinstance(dir_fd, int) and dir_fd >= 0
                base = os.readlink(f"/proc/self/fd/{dir_fd}") if use_fd else ""
                text = os.path.join(base or os.getcwd(), text)
            except OSError:
                return False
        real = os.path.realpath(text)
        return real in (os.devnull, root) or real.startswith(root + os.sep)

    def refuse(what: str, *, probe: bool = False) -> None:
        (noted if probe else violations).append(what)
        raise PermissionError(REFUSED_ERRNO, f"nnrag sandbox: {what} is not allowed")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            writes = bool(
                (flags or 0) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC)
            )
            if (writes or (mode and any(c in str(mode) for c in "wax+"))) and not inside(path):
                refuse(f"writing {os.fsdecode(path)}")
            elif isinstance(path, (str, bytes)) and _other_process(os.fsdecode(path), pid):
                refuse(f"reading {os.fsdecode(path)} (another process's environment and memory)")
        elif event in _WRITE_EVENTS:
            for index, arg in enumerate(args[:2]):
                where = _DIR_FD_ARG.get(event, (None, None))[index]
                dir_fd = args[where] if where is not None and where < len(args) else None
                if isinstance(arg, (str, bytes, os.PathLike)) and not inside(arg, dir_fd):
                    refuse(f"{event} on {os.fsdecode(arg)}")
        elif event == "sqlite3.connect" and args:
            database = args[0]
            if os.fsdecode(database) not in (":memory:", "") and not inside(database):
                refuse(f"sqlite3.connect on {os.fsdecode(database)}")
        elif event in {"os.kill", "os.killpg"}:
            if args and args[0] not in (pid, 0):
                refuse(f"{event}{args}")
        elif event in PROBE_EVENTS:
            if len(args) > 1 and args[1] != getattr(socket, "AF_UNIX", -1):
                family = family_name(args[1])
                refuse(f"{event} (family {family}; only unix sockets are allowed)", probe=True)
        elif event in _PROCESS_EVENTS or event.startswith(_PROCESS_PREFIXES):
            library = library_import(sys._getframe(1), root)
            if library is None:
                refuse(event)
            else:
                refuse(f"{event} by {library} while it is imported", probe=True)
        elif event.startswith(_REFUSED_PREFIXES):
            refuse(event)

    return hook


def _other_process(path: str, pid: int) -> bool:
    """A guarded ``/proc/<pid>/...`` entry (descriptors, environment, memory) of a process
    other than the child itself (``/proc/1/cgroup`` is not guarded)."""
    owner = guarded_proc_owner(os.path.normpath(path))
    return owner is not None and owner != pid
