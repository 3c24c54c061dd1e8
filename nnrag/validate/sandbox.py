"""The sandbox client: runs blocks through one warm server process (``validate.server``)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import warnings
from collections.abc import Mapping
from types import TracebackType
from typing import BinaryIO

from nnrag.errors import SandboxError
from nnrag.validate.frames import (
    BlockReply,
    BlockRequest,
    MalformedMessage,
    Message,
    read_frame,
    write_frame,
)
from nnrag.validate.isolation import LAYERS
from nnrag.validate.lockdown import ENV_ALLOW
from nnrag.validate.server import kill_group


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
        preload: bool = True,
    ) -> None:
        self.memory_mb = memory_mb
        self.disk_mb = disk_mb
        self.strict = strict
        self.kernel_layers = kernel_layers
        """``False``: no namespaces, seccomp or Landlock (measuring their cost; debugging)."""
        self.preload = preload
        """Preload the third-party modules block files import (:mod:`nnrag.validate.preload`)."""
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
            "from nnrag.validate.server import serve; "
            f"serve({req_r}, {resp_w}, {self.memory_mb}, spawn={self.spawn}, "
            f"disk_mb={self.disk_mb}, kernel_layers={self.kernel_layers}, "
            f"preload_imports={self.preload})"
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
            kill_group(proc.pid)
            proc.wait()


def describe_layers(layers: Mapping[str, bool]) -> str:
    """``sandbox: namespaces yes, seccomp yes, landlock no`` (the run summary's line)."""
    found = ", ".join(f"{name} {'yes' if layers.get(name) else 'no'}" for name in LAYERS)
    if sys.platform != "linux":
        return f"sandbox: {found} (not Linux: a process with rlimits and an audit hook only)"
    return f"sandbox: {found}"


__all__ = [
    "ENV_ALLOW",
    "LAYERS",
    "BlockReply",
    "BlockRequest",
    "Sandbox",
    "describe_layers",
    "read_frame",
    "write_frame",
]
