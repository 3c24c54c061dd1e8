"""The warm sandbox server: imports torch once, forks one confined child per block, reaps it."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import pickle
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from nnrag.validate import isolation, preload, syscalls
from nnrag.validate.child import block_main, confine, sender
from nnrag.validate.frames import (
    BlockReply,
    BlockRequest,
    MalformedMessage,
    Message,
    _split_frames,
    read_frame,
    write_frame,
)
from nnrag.validate.isolation import LAYERS
from nnrag.validate.lockdown import PR_SET_PDEATHSIG, lock_down, prctl
from nnrag.validate.replies import summarize

PR_SET_CHILD_SUBREAPER = 36
TRIAL_TIMEOUT_S = 20.0
"""How long a preloading trial (:mod:`nnrag.validate.preload`) may take (a module whose
import takes longer is not preloaded; the client waits a block's timeout + 60 s)."""


def serve(
    req_fd: int,
    resp_fd: int,
    memory_mb: int,
    *,
    spawn: bool = False,
    disk_mb: int = 512,
    kernel_layers: bool = True,
    preload_imports: bool = True,
) -> None:
    """Warm server main loop: import torch once, then fork a child per request.

    ``preload_imports``: import the installed third-party modules a block file imports into
    this server before forking its child (:mod:`nnrag.validate.preload`).
    """
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    mode = "spawn" if spawn or not hasattr(os, "fork") else "fork"
    namespaces = False
    server_pid = os.getpid()
    if mode == "fork" and kernel_layers and isolation.namespaces_work(network=True):
        isolation.enter_server_namespaces(network=True)
        namespaces = True
    if namespaces:
        server_pid = isolation.become_init(close=(req_fd, resp_fd))
        netns = True
    else:  # orphans of blocks land here; an empty network namespace where root may make one
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        unshare = getattr(ctypes.CDLL(None, use_errno=True), "unshare", None)
        netns = unshare is not None and unshare(isolation.CLONE_NEWNET) == 0
    from nnrag.validate.probe import runner as probe
    from nnrag.validate.probe.boot import start_torch

    torch_version = start_torch()
    probe.warm_up()
    requests = os.fdopen(req_fd, "rb", buffering=0)
    isolate = mode == "fork" and kernel_layers
    layers = _layers(namespaces) if isolate else dict.fromkeys(LAYERS, False)
    rules = syscalls.build_filter() if layers["seccomp"] else None
    setup = {"memory_mb": memory_mb, "disk_mb": disk_mb, "layers": layers, "rules": rules}
    gc.collect()
    gc.freeze()  # forked children's collections skip (and so do not copy) the warm objects
    home = Path(tempfile.mkdtemp(prefix="nnrag-preload-")).resolve()
    preloader = preload.Preloader(home) if mode == "fork" and preload_imports else None
    ready = {"ready": True, "torch": torch_version, "mode": mode, "netns": netns}
    write_frame(resp_fd, {**ready, "layers": layers, "server_pid": server_pid})
    while True:
        frame = read_frame(requests)
        if frame is None:
            shutil.rmtree(home, ignore_errors=True)
            return
        try:
            request = BlockRequest.from_plain(frame)
        except MalformedMessage as error:
            refused = BlockReply.failure("internal-error", f"malformed sandbox request: {error}")
            write_frame(resp_fd, refused.to_plain())
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        if mode == "spawn":
            reply, cleanup = _spawn_child(request, memory_mb)
        else:
            server_fds = (req_fd, resp_fd)
            if preloader is not None:
                preloader.before(
                    request.path,
                    request.source_packages,
                    functools.partial(_trial, setup=setup, server_fds=server_fds),
                )
            reply, cleanup = _run_child(request, setup, server_fds)
        write_frame(resp_fd, reply.to_plain())
        cleanup()  # after replying: the client goes on while the child is torn down


def _layers(namespaces: bool) -> dict[str, bool]:
    """The isolation layers this kernel grants a block (found once, by a throwaway child)."""
    tmp = Path(tempfile.mkdtemp(prefix="nnrag-probe-")).resolve()
    try:
        seccomp_ok = syscalls.works if syscalls.importable() else lambda: False
        found = isolation.probe_block_layers(tmp, namespaces=namespaces, seccomp_ok=seccomp_ok)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return found


def _run_child(
    request: BlockRequest, setup: Message, server_fds: tuple[int, ...]
) -> tuple[BlockReply, Callable[[], None]]:
    """Fork a child for ``request``; it closes ``server_fds`` (the client's pipes) first."""

    def main(tmp: Path, result_fd: int, stderr_fd: int, channel: socket.socket | None) -> None:
        block_main(
            request,
            tmp=tmp,
            result_fd=result_fd,
            stderr_fd=stderr_fd,
            channel=channel,
            **_confinement(setup),
        )

    return _forked(main, request.timeout_s, setup, server_fds)


def _confinement(setup: Message) -> Message:
    """The limits and layers of the server's ``setup`` that confine each child it forks."""
    return {key: setup[key] for key in ("memory_mb", "disk_mb", "layers", "rules")}


def _trial(modules: Sequence[str], setup: Message, server_fds: tuple[int, ...]) -> list[Message]:
    """Import ``modules`` in a child confined like a block (:func:`preload.trial_main`); its
    messages (a ``refused`` one for each system call the server refused it)."""

    def main(tmp: Path, result_fd: int, stderr_fd: int, channel: socket.socket | None) -> None:
        violations, probes = confine(
            tmp,
            timeout_s=TRIAL_TIMEOUT_S,
            result_fd=result_fd,
            stderr_fd=stderr_fd,
            channel=channel,
            **_confinement(setup),
        )
        preload.trial_main(
            modules, result_fd=result_fd, tmp=tmp, violations=violations, probes=probes
        )

    messages: list[Message] = []
    _forked(main, TRIAL_TIMEOUT_S, setup, server_fds, messages=messages)[1]()
    return messages


def _forked(
    main: Callable[[Path, int, int, socket.socket | None], None],
    timeout_s: float,
    setup: Message,
    server_fds: tuple[int, ...],
    *,
    messages: list[Message] | None = None,
) -> tuple[BlockReply, Callable[[], None]]:
    """Fork a child that runs ``main(tmp, result_fd, stderr_fd, channel)`` in a fresh folder
    and closes ``server_fds`` first; its reply, and the cleanup to run after replying (the
    raw frames go to ``messages`` too, when given)."""
    tmp = Path(tempfile.mkdtemp(prefix="nnrag-block-")).resolve()
    stderr_fd = os.open(tmp / "stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    read_fd, write_fd = os.pipe()
    ours, theirs = socket.socketpair() if setup["rules"] is not None else (None, None)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        exit_code = 70
        try:
            for fd in (read_fd, *server_fds):  # the block must not reach the client's pipes
                os.close(fd)
            if ours is not None:
                ours.close()
            main(tmp, write_fd, stderr_fd, theirs)
            exit_code = 0
        except BaseException as error:  # the child must never return into the server loop
            with contextlib.suppress(BaseException):
                write_frame(write_fd, {"kind": "fatal", "message": repr(error)})
        finally:
            os._exit(exit_code)
    os.close(write_fd)
    os.close(stderr_fd)
    listener = None
    if ours is not None and theirs is not None:
        theirs.close()
        listener = syscalls.receive_listener(ours, timeout_s)
        ours.close()
    namespaced = bool(setup["layers"]["namespaces"])
    keeper = syscalls.Keeper(str(tmp), namespaced=namespaced) if listener is not None else None
    found, status, timed_out = _collect(pid, read_fd, started + timeout_s, listener, keeper)
    if messages is not None:
        messages.extend(found)
    os.close(read_fd)
    if listener is not None:
        os.close(listener)
    if keeper is not None:
        keeper.close()

    def cleanup() -> None:
        if status is None and not namespaced:
            os.waitpid(pid, 0)
        _reap_leftovers(pid, namespaced=namespaced)
        shutil.rmtree(tmp, ignore_errors=True)

    if found and found[-1].get("kind") == "result":
        return summarize(found, status=status, timed_out=timed_out), cleanup
    _reap_leftovers(pid, namespaced=namespaced)
    stderr_tail = _tail(tmp / "stderr.txt")
    return summarize(found, status=status, timed_out=timed_out, stderr=stderr_tail), cleanup


def _spawn_child(request: BlockRequest, memory_mb: int) -> tuple[BlockReply, Callable[[], None]]:
    """The fallback without fork: a fresh interpreter per block (imports torch every time).

    ``subprocess`` closes inherited descriptors (the client's pipes among them).
    """
    tmp = Path(tempfile.mkdtemp(prefix="nnrag-block-")).resolve()
    read_fd, write_fd = os.pipe()
    code = (
        f"import sys; sys.path[:0] = {[p for p in sys.path if p]!r}; "
        f"from nnrag.validate.server import spawned_child; spawned_child({write_fd}, {memory_mb})"
    )
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        pass_fds=(write_fd,),
        stdin=subprocess.PIPE,
        start_new_session=True,
        cwd=tmp,
    )
    os.close(write_fd)
    assert proc.stdin is not None
    proc.stdin.write(pickle.dumps((request.to_plain(), str(tmp))))
    proc.stdin.close()
    deadline = started + request.timeout_s + 60.0  # + torch import
    messages, status, timed_out = _collect(proc.pid, read_fd, deadline)
    os.close(read_fd)

    def cleanup() -> None:
        if status is None:
            os.waitpid(proc.pid, 0)
        _reap_leftovers(proc.pid)
        shutil.rmtree(tmp, ignore_errors=True)

    stderr_tail = _tail(tmp / "stderr.txt")
    return summarize(messages, status=status, timed_out=timed_out, stderr=stderr_tail), cleanup


def spawned_child(fd: int, memory_mb: int) -> None:
    """Main of a spawned (not forked) child: read the request from stdin, run it, exit."""
    data, tmp = pickle.loads(sys.stdin.buffer.read())
    exit_code = 70
    try:
        from nnrag.validate.probe.boot import start_torch

        start_torch()
        request = BlockRequest.from_plain(data)
        violations, probes = lock_down(Path(tmp), timeout_s=request.timeout_s, memory_mb=memory_mb)
        from nnrag.validate.probe import runner as probe

        probe.run_block(request.to_plain(), send=sender(fd, probes), violations=violations)
        exit_code = 0
    finally:
        os._exit(exit_code)


def _collect(
    pid: int,
    fd: int,
    deadline: float,
    listener: int | None = None,
    keeper: syscalls.Keeper | None = None,
) -> tuple[list[Message], int | None, bool]:
    """Read frames until the child exits or the deadline passes (then kill its group).

    Meanwhile answer the block's refused system calls on ``listener`` (its seccomp
    notifications): each becomes a ``refused`` message naming the call (``probe``: whether
    it is a probe, see :mod:`nnrag.validate.refusals`).
    """
    buffer = bytearray()
    messages: list[Message] = []
    status: int | None = None
    timed_out = False
    os.set_blocking(fd, False)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if listener is not None:
        poller.register(listener, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            kill_group(pid)
            _, status = os.waitpid(pid, 0)
            break
        for ready, events in poller.poll(int(1000 * min(remaining, 0.05))):
            if ready == listener and keeper is not None:
                refused = keeper.answer(ready) if events & select.POLLIN else None
                if refused:
                    what, probe = refused
                    messages.append({"kind": "refused", "message": what, "probe": probe})
                elif events & (select.POLLHUP | select.POLLERR):
                    poller.unregister(ready)
                continue
            _drain(fd, buffer)
            messages.extend(_split_frames(buffer))
            if messages and messages[-1].get("kind") == "result":
                kill_group(pid)  # reaped in cleanup, after the reply is sent
                return messages, None, False
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    _drain(fd, buffer)
    messages.extend(_split_frames(buffer))
    return messages, status, timed_out


def _drain(fd: int, buffer: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            return
        buffer += chunk


def _reap_leftovers(pid: int, *, namespaced: bool = False) -> None:
    """Kill the child's group and every orphan re-parented to this (subreaper) server.

    ``namespaced``: the server is PID 1 of its PID namespace, and one signal kills every
    process the block started, wherever it went. They are not waited for: a killed process
    runs no more code, and tearing down the address space of a forked torch process takes
    tens of milliseconds, which the next block need not wait for (the dead are reaped after
    the next block).
    """
    kill_group(pid)
    if namespaced:
        isolation.kill_namespace()
        _reap_all()
        return
    for _ in range(200):
        _reap_all()
        orphans = _children()
        if not orphans:
            return
        for orphan in orphans:
            kill_group(orphan)
            with contextlib.suppress(ProcessLookupError):
                os.kill(orphan, signal.SIGKILL)
        time.sleep(0.005)


def _children() -> list[int]:
    """Live children of this process (orphans land here: the server is a subreaper)."""
    me = os.getpid()
    try:
        found: list[int] = []
        for task in os.listdir(f"/proc/{me}/task"):
            text = Path(f"/proc/{me}/task/{task}/children").read_text()
            found += [int(p) for p in text.split()]
    except OSError:
        return [p for p, ppid, _ in _proc_table() if ppid == me]
    return found


def _reap_all() -> None:
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not done:
            return


def _proc_table() -> list[tuple[int, int, int]]:
    """(pid, ppid, session id) of every live process, read from /proc."""
    table: list[tuple[int, int, int]] = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] != "Z":
            table.append((int(entry), int(fields[1]), int(fields[3])))
    return table


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


__all__ = ["kill_group", "serve", "spawned_child"]
