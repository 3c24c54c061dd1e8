"""The sandbox: a warm parent that imported torch once forks one locked-down child per block."""

from __future__ import annotations

import contextlib
import ctypes
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
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from nnrag.errors import SandboxError
from nnrag.validate import isolation, syscalls
from nnrag.validate.child import block_main
from nnrag.validate.frames import (
    BlockReply,
    BlockRequest,
    MalformedMessage,
    Message,
    _split_frames,
    plain,
    read_frame,
    write_frame,
)
from nnrag.validate.lockdown import ENV_ALLOW, PR_SET_PDEATHSIG, lock_down, prctl

CLONE_NEWNET = 0x40000000
PR_SET_CHILD_SUBREAPER = 36
LAYERS = ("namespaces", "seccomp", "landlock")
"""The kernel isolation layers, in the order the run summary names them."""


# --------------------------------------------------------------------------- client


class Sandbox:
    """Runs blocks in forked, locked-down children of one warm server process.

    Use as a context manager; the server starts on first use and is restarted if it dies.
    """

    def __init__(
        self,
        *,
        memory_mb: int = 4096,
        python: str | None = None,
        spawn: bool = False,
        strict: bool = False,
        disk_mb: int = 512,
        kernel_layers: bool = True,
    ) -> None:
        self.memory_mb = memory_mb
        self.disk_mb = disk_mb
        self.strict = strict
        self.kernel_layers = kernel_layers
        """``False``: no namespaces, seccomp or Landlock (measuring their cost; debugging)."""
        self.spawn = spawn or not hasattr(os, "fork")
        self.python = python or sys.executable
        self.info: Message = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._requests: BinaryIO | None = None
        self._responses: BinaryIO | None = None
        self._warned = False
        self.restarts = 0

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """Process id of the warm server, if it runs."""
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    @property
    def server_pid(self) -> int | None:
        """Process id of the process that forks the blocks (PID 1 of the server's namespace)."""
        if self.pid is None:
            return None
        return int(self.info.get("server_pid", self.pid))

    @property
    def layers(self) -> dict[str, bool]:
        """Which kernel isolation layers the blocks run under (known once the server started)."""
        found = self.info.get("layers", {})
        return {name: bool(found.get(name)) for name in LAYERS}

    def start(self) -> None:
        """Start the warm server (imports torch once) and wait until it is ready.

        Raises :class:`SandboxError` when ``strict`` and the kernel refuses a layer.
        """
        if self.pid is not None:
            return
        if self._proc is not None:  # it died since the last block
            self.restarts += 1
        self.close()
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        code = (
            f"import sys; sys.path[:0] = {[p for p in sys.path if p]!r}; "
            "from nnrag.validate.sandbox import serve; "
            f"serve({req_r}, {resp_w}, {self.memory_mb}, spawn={self.spawn}, "
            f"disk_mb={self.disk_mb}, kernel_layers={self.kernel_layers})"
        )
        env = {k: v for k, v in os.environ.items() if k in ENV_ALLOW}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
        try:
            self._proc = subprocess.Popen(
                [self.python, "-c", code],
                pass_fds=(req_r, resp_w),
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            os.close(req_r)
            os.close(resp_w)
        self._requests = os.fdopen(req_w, "wb", buffering=0)
        self._responses = os.fdopen(resp_r, "rb", buffering=0)
        ready = self._receive(timeout_s=300.0)
        if not isinstance(ready, dict) or not ready.get("ready"):
            self.close()
            raise SandboxError(
                f"the sandbox server ({self.python}) did not start: {ready!r}; "
                "check that torch imports in this interpreter"
            )
        self.info = ready
        missing = [name for name, active in self.layers.items() if not active]
        if self.strict and missing:
            self.close()
            raise SandboxError(
                f"strict sandbox: this system does not give blocks {', '.join(missing)} "
                f"({describe_layers(self.layers)}); run untrusted blocks on a Linux kernel with "
                "unprivileged user namespaces, seccomp and Landlock, or without strict mode"
            )
        if ready.get("mode") == "spawn" and not self._warned:
            self._warned = True
            warnings.warn(
                "os.fork is not available: the sandbox falls back to one fresh interpreter "
                "per block (slow: torch is imported for every block)",
                RuntimeWarning,
                stacklevel=2,
            )

    def _receive(self, *, timeout_s: float) -> object | None:
        assert self._responses is not None
        ready, _, _ = select.select([self._responses], [], [], timeout_s)
        if not ready:
            return None
        return read_frame(self._responses)

    def run(self, request: BlockRequest) -> BlockReply:
        """Run one block request in a fresh child; always returns a reply.

        A reply that is not a well-formed :class:`BlockReply` is an ``internal-error`` naming
        what was wrong with it.
        """
        for attempt in range(2):
            self.start()
            assert self._requests is not None
            try:
                write_frame(self._requests.fileno(), request.to_plain())
                reply = self._receive(timeout_s=request.timeout_s + 60.0)
            except OSError:
                reply = None
            if isinstance(reply, dict):
                try:
                    return BlockReply.from_plain(reply)
                except MalformedMessage as error:
                    message = f"the sandbox server sent a malformed reply: {error}"
                    return BlockReply.failure("internal-error", message)
            self.close()
            self.restarts += 1
            if attempt:
                break
        message = "the sandbox server died twice while running this block"
        return BlockReply.failure("internal-error", message)

    def close(self) -> None:
        """Stop the server and any child it still has."""
        proc, self._proc = self._proc, None
        for stream in (self._requests, self._responses):
            if stream is not None:
                stream.close()
        self._requests = self._responses = None
        if proc is None:
            return
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()


def describe_layers(layers: Mapping[str, bool]) -> str:
    """``sandbox: namespaces yes, seccomp yes, landlock no`` (the run summary's line)."""
    found = ", ".join(f"{name} {'yes' if layers.get(name) else 'no'}" for name in LAYERS)
    if sys.platform != "linux":
        return f"sandbox: {found} (not Linux: a process with rlimits and an audit hook only)"
    return f"sandbox: {found}"


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


# --------------------------------------------------------------------------- server


def serve(
    req_fd: int,
    resp_fd: int,
    memory_mb: int,
    *,
    spawn: bool = False,
    disk_mb: int = 512,
    kernel_layers: bool = True,
) -> None:
    """Warm server main loop: import torch once, then fork a child per request."""
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
        netns = unshare is not None and unshare(CLONE_NEWNET) == 0
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
    ready = {"ready": True, "torch": torch_version, "mode": mode, "netns": netns}
    write_frame(resp_fd, {**ready, "layers": layers, "server_pid": server_pid})
    while True:
        frame = read_frame(requests)
        if frame is None:
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
            reply, cleanup = _run_child(request, setup, (req_fd, resp_fd))
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
    tmp = Path(tempfile.mkdtemp(prefix="nnrag-block-")).resolve()
    timeout_s = request.timeout_s
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
            block_main(
                request,
                tmp=tmp,
                result_fd=write_fd,
                stderr_fd=stderr_fd,
                memory_mb=setup["memory_mb"],
                disk_mb=setup["disk_mb"],
                layers=setup["layers"],
                rules=setup["rules"],
                channel=theirs,
            )
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
    messages, status, timed_out = _collect(pid, read_fd, started + timeout_s, listener, keeper)
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

    if messages and messages[-1].get("kind") == "result":
        return summarize(messages, status=status, timed_out=timed_out), cleanup
    _reap_leftovers(pid, namespaced=namespaced)
    stderr_tail = _tail(tmp / "stderr.txt")
    return summarize(messages, status=status, timed_out=timed_out, stderr=stderr_tail), cleanup


def _spawn_child(request: BlockRequest, memory_mb: int) -> tuple[BlockReply, Callable[[], None]]:
    """The fallback without fork: a fresh interpreter per block (imports torch every time).

    ``subprocess`` closes inherited descriptors (the client's pipes among them).
    """
    tmp = Path(tempfile.mkdtemp(prefix="nnrag-block-")).resolve()
    read_fd, write_fd = os.pipe()
    code = (
        f"import sys; sys.path[:0] = {[p for p in sys.path if p]!r}; "
        f"from nnrag.validate.sandbox import spawned_child; spawned_child({write_fd}, {memory_mb})"
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
        violations = lock_down(Path(tmp), timeout_s=request.timeout_s, memory_mb=memory_mb)
        from nnrag.validate.probe import runner as probe

        probe.run_block(
            request.to_plain(),
            send=lambda message: write_frame(fd, plain(message)),
            violations=violations,
        )
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
    notifications): each becomes a ``refused`` message naming the call.
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
            _kill_group(pid)
            _, status = os.waitpid(pid, 0)
            break
        for ready, events in poller.poll(int(1000 * min(remaining, 0.05))):
            if ready == listener and keeper is not None:
                refused = keeper.answer(ready) if events & select.POLLIN else None
                if refused:
                    messages.append({"kind": "refused", "message": refused})
                elif events & (select.POLLHUP | select.POLLERR):
                    poller.unregister(ready)
                continue
            _drain(fd, buffer)
            messages.extend(_split_frames(buffer))
            if messages and messages[-1].get("kind") == "result":
                _kill_group(pid)  # reaped in cleanup, after the reply is sent
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
    _kill_group(pid)
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
            _kill_group(orphan)
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


def _refusals(refused: list[str], shown: int = 3) -> str:
    """``refused: A; B; C (and 5 more)``: the first distinct operations the block tried."""
    distinct = list(dict.fromkeys(str(what) for what in refused))
    more = f" (and {len(distinct) - shown} more)" if len(distinct) > shown else ""
    return "refused: " + "; ".join(distinct[:shown]) + more


def summarize(
    messages: list[Message], *, status: int | None, timed_out: bool, stderr: str = ""
) -> BlockReply:
    """Turn the child's messages and exit status into one reply.

    A result frame that is not a well-formed reply (the block's code can write to the pipe)
    is a ``crash`` naming what was wrong with it.
    """
    try:
        return BlockReply.from_plain(_summary(messages, status, timed_out, stderr))
    except MalformedMessage as error:
        return BlockReply.failure("crash", f"the block sent a malformed result: {error}")
    except (KeyError, TypeError, AttributeError) as error:  # a message missing a field
        what = f"{type(error).__name__}: {error}"
        return BlockReply.failure("crash", f"the block sent a malformed message ({what})")


def _summary(messages: list[Message], status: int | None, timed_out: bool, stderr: str) -> Message:
    result: Message = {"stage_reached": None, "timings": {}, "harvest": []}
    refused = [m["message"] for m in messages if m.get("kind") == "refused"]
    if refused:  # only block code writing to the pipe makes these: a violation, whatever follows
        reached = [m["stage"] for m in messages if m.get("kind") == "stage"]
        running = [m["stage"] for m in messages if m.get("kind") == "running"]
        return {
            **result,
            "stage_reached": reached[-1] if reached else None,
            "failed_stage": running[-1] if running else None,
            "category": "sandbox-violation",
            "message": _refusals(refused),
        }
    for message in messages:
        if message.get("kind") == "stage":
            result["stage_reached"] = message["stage"]
            result["timings"][message["stage"]] = message["seconds"]
        elif message.get("kind") == "running":
            result["running"] = message["stage"]
        elif message.get("kind") == "harvest":
            result["harvest"].append(message["record"])
        elif message.get("kind") == "result":
            result.update({k: v for k, v in message.items() if k not in {"kind", "timings"}})
            timings = message.get("timings", {})
            result["timings"].update(timings if isinstance(timings, dict) else {"?": timings})
            result.pop("running", None)
            return result
        elif message.get("kind") == "fatal":
            result.update(category="internal-error", message=message["message"])
    result["failed_stage"] = result.pop("running", None)
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    tail = lines if len(lines) <= 6 else [*lines[:2], "...", *lines[-4:]]
    detail = ("; stderr: " + " | ".join(tail)) if tail else ""
    if timed_out:
        result.update(category="timeout", message="wall-clock timeout; process group killed")
    elif status is not None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        category = {"SIGXCPU": "timeout", "SIGKILL": "memory"}.get(name, "crash")
        hint = " (likely out of memory)" if name == "SIGKILL" else ""
        result.update(category=category, message=f"child killed by {name}{hint}{detail}")
    elif "category" not in result:
        code = os.WEXITSTATUS(status) if status is not None else -1
        result.update(category="crash", message=f"child exited ({code}) with no result{detail}")
    return result


__all__ = [
    "ENV_ALLOW",
    "LAYERS",
    "BlockReply",
    "BlockRequest",
    "Sandbox",
    "describe_layers",
    "read_frame",
    "serve",
    "summarize",
    "write_frame",
]
