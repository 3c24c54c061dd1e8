"""The seccomp layer: system calls a block may not make, refused and named by its keeper.

The filter is built with libseccomp through ``pyseccomp`` (ctypes bindings, API-compatible with
libseccomp's own Python module, which is not on PyPI). Refused calls go to the kernel's user
notification (``SECCOMP_RET_USER_NOTIF``): the block's thread waits while its keeper — the
process outside the block's PID namespace that started it — records the call by name and
answers ``EPERM``. So native code (ctypes, ``_posixsubprocess``, C extensions) is refused like
Python code, and the report names the operation. Where the kernel has no user notification,
the same calls fail with ``EPERM`` directly and are not named.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import socket
import struct
from typing import Any

REFUSED = (
    "execve",
    "execveat",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "mount",
    "umount2",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fspick",
    "pivot_root",
    "chroot",
    "setns",
    "unshare",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "io_uring_setup",
    "userfaultfd",
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
)
"""Refused outright (by name in the report)."""
_NAMESPACE_FLAGS = (  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)
_NOTIF = struct.Struct("=QII iIQ6Q")  # struct seccomp_notif: id, pid, flags, seccomp_data
_NOTIF_RESP = struct.Struct("=QqiI")  # struct seccomp_notif_resp: id, val, error, flags
_IOCTL_RECV = (3 << 30) | (_NOTIF.size << 16) | (ord("!") << 8) | 0
_IOCTL_SEND = (3 << 30) | (_NOTIF_RESP.size << 16) | (ord("!") << 8) | 1


def build_filter(*, notify: bool = True) -> Any:
    """The filter (not loaded yet): allow everything but :data:`REFUSED`, namespace flags of
    ``clone``, ``clone3`` (``ENOSYS``: libc falls back to ``clone``) and non-unix sockets."""
    import pyseccomp as seccomp

    action = seccomp.NOTIFY if notify else seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in REFUSED:
        with contextlib.suppress(OSError, ValueError):  # unknown on this architecture
            rules.add_rule(action, name)
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in _NAMESPACE_FLAGS:
        rules.add_rule(action, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    for name in ("socket", "socketpair"):
        rules.add_rule(action, name, seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    return rules


def load(rules: Any, channel: socket.socket | None) -> bool:
    """Load ``rules`` into this process; send the notification descriptor over ``channel``.

    Returns whether the descriptor went to the keeper (the block keeps no copy of it: with it,
    the block could answer its own refused calls).
    """
    import pyseccomp as seccomp

    rules.load()
    if channel is None:
        return False
    fd = seccomp._libseccomp.seccomp_notify_fd(rules._filter)
    if fd < 0:
        return False
    try:
        socket.send_fds(channel, [b"n"], [fd])
    finally:
        os.close(fd)
        channel.close()
    return True


def importable() -> bool:
    """Import the bindings now (their import runs ``ldconfig``: never inside a sandbox)."""
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def works() -> bool:
    """Whether this kernel and libseccomp load a notifying filter (in a throwaway child)."""
    try:
        rules = build_filter()
        rules.load()
    except Exception:
        return False
    return True


def receive_listener(channel: socket.socket, timeout_s: float) -> int | None:
    """The notification descriptor the block sends right after loading its filter."""
    ready, _, _ = select.select([channel], [], [], timeout_s)
    if not ready:
        return None
    with contextlib.suppress(OSError):
        _, fds, _, _ = socket.recv_fds(channel, 1, 1)
        return fds[0] if fds else None
    return None


def answer(listener: int) -> str | None:
    """Answer one pending refused call with ``EPERM``; its description, ``None`` if none."""
    import pyseccomp as seccomp

    buffer = bytearray(_NOTIF.size)
    try:
        fcntl.ioctl(listener, _IOCTL_RECV, buffer, True)
    except OSError:
        return None  # the caller died meanwhile, or no filter user is left
    ident, _, _, nr, arch, _, *args = _NOTIF.unpack(buffer)
    with contextlib.suppress(OSError):
        fcntl.ioctl(listener, _IOCTL_SEND, bytearray(_NOTIF_RESP.pack(ident, 0, -errno.EPERM, 0)))
    try:
        name = seccomp.resolve_syscall(arch, nr).decode()
    except (OSError, ValueError):
        name = f"#{nr}"
    return _describe(name, args)


def _describe(name: str, args: list[int]) -> str:
    if name in {"socket", "socketpair"}:
        families = {int(socket.AF_INET): "AF_INET", int(socket.AF_INET6): "AF_INET6"}
        family = families.get(args[0], str(args[0]))
        return f"system call {name} (family {family}; only unix sockets are allowed)"
    if name == "clone":
        return "system call clone with new namespaces"
    return f"system call {name}"


__all__ = [
    "REFUSED",
    "build_filter",
    "importable",
    "load",
    "receive_listener",
    "works",
]
