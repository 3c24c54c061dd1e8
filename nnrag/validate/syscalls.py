"""The seccomp layer: system calls a block may not make, refused and named by its keeper.

The filter is built with libseccomp through ``pyseccomp`` (ctypes bindings, API-compatible with
libseccomp's own Python module, which is not on PyPI). Refused calls go to the kernel's user
notification (``SECCOMP_RET_USER_NOTIF``): the block's thread waits while its keeper — the
process outside the block's PID namespace that started it — records the call by name and
answers ``EPERM``. So native code (ctypes, ``_posixsubprocess``, C extensions) is refused like
Python code, and the report names the operation. Writes by path (``open`` for writing,
``unlink``, ``rename``, ``mkdir``, ...) are asked too: below the block's folder they go on,
elsewhere they are refused and named (the mounts and Landlock refuse them anyway). New
processes and threads are counted. Where the kernel has no user notification, the refused
calls fail with ``EPERM`` directly and are not named.
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
_PATH_CALLS: dict[str, tuple[tuple[int | None, int], ...]] = {
    # system call -> (dirfd argument or None for the working folder, path argument) per path it
    # writes; asked to the server, which lets a call through only below the block's folder
    "open": ((None, 0),),
    "openat": ((0, 1),),
    "creat": ((None, 0),),
    "unlink": ((None, 0),),
    "unlinkat": ((0, 1),),
    "rmdir": ((None, 0),),
    "mkdir": ((None, 0),),
    "mkdirat": ((0, 1),),
    "mknod": ((None, 0),),
    "mknodat": ((0, 1),),
    "rename": ((None, 0), (None, 1)),
    "renameat": ((0, 1), (2, 3)),
    "renameat2": ((0, 1), (2, 3)),
    "link": ((None, 1),),
    "linkat": ((2, 3),),
    "symlink": ((None, 1),),
    "symlinkat": ((1, 2),),
    "truncate": ((None, 0),),
    "chmod": ((None, 0),),
    "fchmodat": ((0, 1),),
    "chown": ((None, 0),),
    "lchown": ((None, 0),),
    "fchownat": ((0, 1),),
}
_OPEN_FLAGS_ARG = {"open": 1, "openat": 2}  # only opens that write are asked
_WRITE_FLAGS = (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC)
_KERNEL_DECIDES = ("/dev/", "/proc/")  # devices and the block's own /proc entries
_AT_FDCWD = -100
MAX_TASKS = 128
"""Processes and threads one block may start (RLIMIT_NPROC does not bind uid 0, even inside a
user namespace; this count does)."""
_NAMESPACE_MASK = sum(_NAMESPACE_FLAGS)
_CONTINUE = 1  # SECCOMP_USER_NOTIF_FLAG_CONTINUE
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
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "openat2")  # flags in a struct: libc falls back
    if notify:  # writes by path: the server names those outside the block's folder
        for name in _PATH_CALLS:
            with contextlib.suppress(OSError, ValueError):
                if name not in _OPEN_FLAGS_ARG:
                    rules.add_rule(action, name)
                    continue
                for flag in _WRITE_FLAGS:
                    arg = seccomp.Arg(_OPEN_FLAGS_ARG[name], seccomp.MASKED_EQ, flag, flag)
                    rules.add_rule(action, name, arg)
    if notify:  # every new process or thread is counted by the server (namespace flags refused)
        for name in ("clone", "fork", "vfork"):
            with contextlib.suppress(OSError, ValueError):
                rules.add_rule(action, name)
    else:
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


def answer(listener: int, root: str, started: list[int]) -> str | None:
    """Answer one pending call; its description if refused, ``None`` if let through or none.

    Writes by path below ``root`` (the block's folder) go on, checked by the kernel as usual;
    so do new processes and threads while ``started`` (one counter per block) stays below
    :data:`MAX_TASKS`; anything else gets ``EPERM`` (``EAGAIN`` past the process count).
    Paths are read from the block's memory for the report only:
    what the block may write is enforced by the mounts and Landlock, not by this answer.
    """
    import pyseccomp as seccomp

    buffer = bytearray(_NOTIF.size)
    try:
        fcntl.ioctl(listener, _IOCTL_RECV, buffer, True)
    except OSError:
        return None  # the caller died meanwhile, or no filter user is left
    ident, pid, _, nr, arch, _, *args = _NOTIF.unpack(buffer)
    try:
        name = seccomp.resolve_syscall(arch, nr).decode()
    except (OSError, ValueError):
        name = f"#{nr}"
    refused: str | None = _describe(name, args)
    code = errno.EPERM
    if name in {"clone", "fork", "vfork"} and not (name == "clone" and args[0] & _NAMESPACE_MASK):
        started[0] += 1
        refused = None
        if started[0] > MAX_TASKS:
            refused = f"more than {MAX_TASKS} processes or threads (a fork bomb)"
            code = errno.EAGAIN
    elif name in _PATH_CALLS:
        paths = [_path_of(pid, args, at, where) for at, where in _PATH_CALLS[name]]
        if all(path is not None and _allowed(path, root) for path in paths):
            refused = None
        else:
            refused = f"system call {name} on {', '.join(p or '?' for p in paths)}"
    reply = (ident, 0, 0, _CONTINUE) if refused is None else (ident, 0, -code, 0)
    with contextlib.suppress(OSError):
        fcntl.ioctl(listener, _IOCTL_SEND, bytearray(_NOTIF_RESP.pack(*reply)))
    return refused


def _allowed(path: str, root: str) -> bool:
    return path == root or path.startswith((root + os.sep, *_KERNEL_DECIDES))


def _path_of(pid: int, args: list[int], at: int | None, where: int) -> str | None:
    """The absolute path a call of ``pid`` names (``None`` where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
            text = _c_string(memory.fileno(), args[where])
        if text is None:
            return None
        if not text.startswith("/"):
            dirfd = args[at] & 0xFFFFFFFF if at is not None else _AT_FDCWD & 0xFFFFFFFF
            dirfd = dirfd - (1 << 32) if dirfd >= 1 << 31 else dirfd
            folder = "cwd" if dirfd == _AT_FDCWD else f"fd/{dirfd}"
            text = os.path.join(os.readlink(f"/proc/{pid}/{folder}"), text)
    except OSError:
        return None
    return os.path.normpath(text)


def _c_string(fd: int, address: int, limit: int = 4096) -> str | None:
    data = b""
    while len(data) < limit:
        chunk = os.pread(fd, min(256, 4096 - (address + len(data)) % 4096), address + len(data))
        if not chunk:
            return None
        end = chunk.find(b"\0")
        if end >= 0:
            return os.fsdecode(data + chunk[:end])
        data += chunk
    return None


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
