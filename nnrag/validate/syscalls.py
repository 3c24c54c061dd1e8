"""The seccomp layer: system calls a block may not make, refused and named by its keeper.

The filter is built with libseccomp through ``pyseccomp`` (ctypes bindings, API-compatible with
libseccomp's own Python module, which is not on PyPI). Refused calls go to the kernel's user
notification (``SECCOMP_RET_USER_NOTIF``): the block's thread waits while its keeper — the
process outside the block's PID namespace that started it — records the call by name and
answers ``EPERM``. So native code (ctypes, ``_posixsubprocess``, C extensions) is refused like
Python code, and the report names the operation. Writes by path (``open`` for writing,
``unlink``, ``rename``, ``mkdir``, ...) are asked too: below the block's folder they go on,
elsewhere they are refused and named (the mounts and Landlock refuse them anyway), also
when a symbolic link in the block's folder points out of it. Every ``open`` is asked: one of
another process's ``/proc/<pid>`` entries (its descriptors, environment, memory) is refused
and named. Signals (``kill``, ``tgkill``, ...) reach only the block's own processes: one aimed
at the keeper or any other process is refused and named. ``connect`` and ``sendto`` with an
address are asked: a network address or a unix socket outside the block's folder is refused
and named (the mounts do not stop a connect: as root, ``docker.sock`` would answer). New
processes and threads are counted. Where the kernel has no user notification, the refused
calls fail with ``EPERM`` directly and are not named. A refused non-unix ``socket`` is a probe
(:mod:`nnrag.validate.refusals`), and so is a unix socket outside the folder: a note on the
result unless the block fails on it.
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

from nnrag.validate.refusals import PROBE_SYSCALLS, family_name

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
_OPEN_FLAGS_ARG = {"open": 1, "openat": 2, "creat": None}  # opens: writes are path calls
_WRITE_FLAGS = (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC)
_FOLLOWS_LAST = {"open", "openat", "creat", "truncate", "chmod", "chown", "fchmodat"}
"""Calls whose last path component, a symbolic link, is followed (``unlink`` of a link is not)."""
_SIGNAL_CALLS = {  # system call -> (argument naming the target, "pid" | "tid", signal argument)
    "kill": (0, "pid", 1),
    "tkill": (0, "tid", 1),
    "tgkill": (0, "pid", 2),
    "rt_sigqueueinfo": (0, "pid", 1),
    "rt_tgsigqueueinfo": (0, "pid", 2),
    "pidfd_open": (0, "pid", None),
}
_GUARDED = frozenset(
    {
        "environ",
        "mem",
        "fd",
        "fdinfo",
        "maps",
        "smaps",
        "smaps_rollup",
        "numa_maps",
        "pagemap",
        "map_files",
        "cwd",
        "root",
        "exe",
        "auxv",
        "stack",
        "syscall",
        "io",
        "personality",
        "timers",
        "ns",
    }
)
"""``/proc/<pid>`` entries of another process a block may not open (the kernel's ptrace access
check refuses most of them: here they are named)."""
_KERNEL_DECIDES = ("/dev/", "/proc/")  # devices and the block's own /proc entries
_AT_FDCWD = -100
_OUTSIDE_SOCKET = " (outside the block's folder)"
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
    if notify:  # writes by path, every open and every signal: the server names refusals
        for name in (*_PATH_CALLS, *_SIGNAL_CALLS):
            with contextlib.suppress(OSError, ValueError):  # unknown on this architecture
                rules.add_rule(action, name)
    if notify:  # every new process or thread is counted by the server (namespace flags refused)
        for name in ("clone", "fork", "vfork"):
            with contextlib.suppress(OSError, ValueError):
                rules.add_rule(action, name)
    else:
        for flag in _NAMESPACE_FLAGS:
            rules.add_rule(action, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    for name in ("socket", "socketpair"):
        rules.add_rule(action, name, seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    if notify:  # the address is in memory: the server reads it (network addresses are refused)
        rules.add_rule(action, "connect")
        rules.add_rule(action, "sendto", seccomp.Arg(4, seccomp.NE, 0))  # with an address
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


class Keeper:
    """Answers one block's notified system calls (in the server, one per block).

    ``root`` is the block's folder; ``namespaced``: the keeper is PID 1 of the block's PID
    namespace (``kill(-1)`` then reaches only the block's processes).
    """

    def __init__(self, root: str, *, namespaced: bool) -> None:
        self.root = root
        self.namespaced = namespaced
        self.keeper = os.getpid()
        self.started = 0
        """Processes and threads the block started."""
        self._memory: dict[int, int] = {}
        self._links: dict[str, str] = {}  # resolved path -> the path the block named

    def close(self) -> None:
        """Close the descriptors of the block's memory kept open between calls."""
        for fd in self._memory.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._memory.clear()

    def answer(self, listener: int) -> tuple[str, bool] | None:
        """Answer one pending call: ``(its description, whether it is a probe)`` if refused
        (:mod:`nnrag.validate.refusals`), ``None`` if let through.

        Writes by path below the block's folder go on, checked by the kernel as usual; so do
        opens of anything but another process's ``/proc`` entries, signals to the block's
        own processes and new processes and threads while fewer than :data:`MAX_TASKS` were
        started, and ``connect``/``sendto`` to a unix socket in the block's folder (or an
        abstract one); anything else gets ``EPERM``
        (``EACCES`` for ``/proc``, ``EAGAIN`` past the process count). What the block may write
        is enforced by the mounts and Landlock; the paths read from the block's memory here
        name what it tried.
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
        refused, code = self._judge(name, pid, args)
        reply = (ident, 0, 0, _CONTINUE) if refused is None else (ident, 0, -code, 0)
        with contextlib.suppress(OSError):
            fcntl.ioctl(listener, _IOCTL_SEND, bytearray(_NOTIF_RESP.pack(*reply)))
        if refused is None:
            return None
        return refused, name in PROBE_SYSCALLS or refused.endswith(_OUTSIDE_SOCKET)

    def _judge(self, name: str, pid: int, args: list[int]) -> tuple[str | None, int]:
        """(what was refused or ``None``, the error number to answer with)."""
        if name in {"clone", "fork", "vfork"} and not (
            name == "clone" and args[0] & _NAMESPACE_MASK
        ):
            self.started += 1
            if self.started > MAX_TASKS:
                return f"more than {MAX_TASKS} processes or threads (a fork bomb)", errno.EAGAIN
            return None, 0
        if name in _SIGNAL_CALLS:
            return self._signal(name, args), errno.EPERM
        if name in {"connect", "sendto"}:
            where = 1 if name == "connect" else 4
            return self._address(pid, name, args[where], args[where + 1]), errno.EPERM
        if name in _OPEN_FLAGS_ARG and not self._writes(name, args):
            path = self._path_of(pid, args, *_PATH_CALLS[name][0], follow=True)
            owner = guarded_proc_owner(path) if path is not None else None
            if owner is not None and self._outside(owner):
                return f"system call {name} on {path} (another process)", errno.EACCES
            return None, 0
        if name in _PATH_CALLS:
            follow = name in _FOLLOWS_LAST
            found = [
                self._path_of(pid, args, at, arg, follow=follow) for at, arg in _PATH_CALLS[name]
            ]
            shown = ", ".join(self._shown(path) for path in found)
            owners = [guarded_proc_owner(path) for path in found if path is not None]
            if any(owner is not None and self._outside(owner) for owner in owners):
                return f"system call {name} on {shown} (another process)", errno.EACCES
            if all(path is not None and _allowed(path, self.root) for path in found):
                return None, 0
            return f"system call {name} on {shown}", errno.EPERM
        return _describe(name, args), errno.EPERM

    @staticmethod
    def _writes(name: str, args: list[int]) -> bool:
        flags_arg = _OPEN_FLAGS_ARG[name]
        return flags_arg is None or any(args[flags_arg] & flag for flag in _WRITE_FLAGS)

    def _signal(self, name: str, args: list[int]) -> str | None:
        """What a signal call aims at, when that is not the block's own processes."""
        where, kind, sig_arg = _SIGNAL_CALLS[name]
        target = _signed(args[where])
        if sig_arg is not None and args[sig_arg] & 0xFFFFFFFF == 0:
            return None  # signal 0 only asks whether the process exists
        if target == 0 and name == "kill":
            return None  # its own process group
        if target == -1 and name == "kill":
            if self.namespaced:
                return None  # the kernel spares PID 1: only the block's processes
            return "system call kill of every process (-1)"
        if target < -1 and name == "kill":
            members = _group_members(-target)
            if any(self._outside(member) for member in members):
                return f"system call kill of process group {-target} (not the block's own)"
            return None
        process = _thread_group(target) if kind == "tid" else target
        if process is not None and self._outside(process):
            what = "the sandbox server" if process == self.keeper else "not a process of the block"
            return f"system call {name} of pid {target} ({what})"
        return None  # the block's own, or no such process (the kernel answers ESRCH)

    def _address(self, pid: int, name: str, address: int, length: int) -> str | None:
        """What a ``connect``/``sendto`` aims at, unless it is a unix socket in the block's
        folder, an abstract or unnamed one (its network namespace's own) or ``AF_UNSPEC``.

        A unix socket outside the folder is a probe (the C library asks ``nscd`` or ``sssd``
        that way on its own); a network address is an attempt to reach the network.
        """
        try:
            data = os.pread(self._memory_fd(pid), min(length & 0xFFFFFFFF, 128), address)
        except OSError:
            data = b""
        if len(data) < 2:
            return f"system call {name} (address unreadable)"
        (family,) = struct.unpack("=H", data[:2])
        if family == socket.AF_UNSPEC or (family == socket.AF_UNIX and data[2:3] in (b"", b"\0")):
            return None
        if family != socket.AF_UNIX:
            return f"system call {name} to {_network_address(family, data)} (a network address)"
        path = self._path_of(pid, [address + 2], None, 0, follow=True)
        if path is not None and (path == self.root or path.startswith(self.root + os.sep)):
            return None
        return f"system call {name} to unix socket {self._shown(path)}{_OUTSIDE_SOCKET}"

    def _outside(self, pid: int) -> bool:
        """``pid`` exists and is not one of the block's processes (the keeper's descendants)."""
        if pid == self.keeper:
            return True
        current = pid
        for _ in range(256):
            parent = _parent_of(current)
            if parent is None:
                return False  # gone meanwhile: unknown, the kernel answers as usual
            if parent == self.keeper:
                return False
            if parent == 0:
                return True
            current = parent
        return True

    def _path_of(
        self, pid: int, args: list[int], at: int | None, where: int, *, follow: bool
    ) -> str | None:
        """The absolute path a call of ``pid`` names (``None`` where it cannot be read).

        Symbolic links in the block's folder are resolved as the block sees them (through
        ``/proc/<pid>/root``): a link that points out of the folder names where it points.
        """
        try:
            text = _c_string(self._memory_fd(pid), args[where])
            if text is None:
                return None
            if not text.startswith("/"):
                dirfd = _signed(args[at]) if at is not None else _AT_FDCWD
                folder = "cwd" if dirfd == _AT_FDCWD else f"fd/{dirfd}"
                text = os.path.join(os.readlink(f"/proc/{pid}/{folder}"), text)
        except OSError:
            return None
        path = os.path.normpath(text)
        if _allowed(path, self.root) and not path.startswith(_KERNEL_DECIDES):
            resolved = _resolve(pid, path, follow=follow)
            if resolved != path:
                self._links[resolved] = path
            return resolved
        return path

    def _shown(self, path: str | None) -> str:
        """``path`` for the report; ``link -> target`` where a symbolic link led there."""
        if path is None:
            return "?"
        named = self._links.get(path)
        return f"{named} -> {path} (a symbolic link)" if named else path

    def _memory_fd(self, pid: int) -> int:
        fd = self._memory.get(pid)
        if fd is None:
            fd = self._memory[pid] = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
        return fd


def _signed(value: int) -> int:
    """A system call's ``int`` argument (the low 32 bits of the register, signed)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _status_field(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _parent_of(pid: int) -> int | None:
    return _status_field(pid, "PPid:")


def _thread_group(tid: int) -> int | None:
    return _status_field(tid, "Tgid:")


def _group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                    stat = handle.read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid:
                found.append(int(entry))
    return found


def guarded_proc_owner(path: str) -> int | None:
    """The process whose guarded ``/proc/<pid>/...`` entry ``path`` is (its descriptors,
    environment, memory, ...), ``None`` for any other path (``/proc/1/cgroup`` included)."""
    parts = path.split(os.sep)
    if len(parts) < 4 or parts[1] != "proc" or not parts[2].isdigit():
        return None
    entry = parts[5] if len(parts) > 5 and parts[3] == "task" else parts[3]
    return int(parts[2]) if entry in _GUARDED else None


def _resolve(pid: int, path: str, *, follow: bool, hops: int = 40) -> str:
    """``path`` with symbolic links resolved in ``pid``'s view of the file system."""
    parts = [part for part in path.split(os.sep) if part]
    done = "/"
    while parts and hops > 0:
        part = parts.pop(0)
        candidate = os.path.join(done, part)
        if not parts and not follow:
            return candidate
        try:
            target = os.readlink(f"/proc/{pid}/root{candidate}")
        except OSError:  # not a link, or missing: the kernel decides
            done = candidate
            continue
        hops -= 1
        parts = [p for p in target.split(os.sep) if p] + parts
        if target.startswith("/"):
            done = "/"
    return os.path.normpath(os.path.join(done, *parts))


def _allowed(path: str, root: str) -> bool:
    return path == root or path.startswith((root + os.sep, *_KERNEL_DECIDES))


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


def _network_address(family: int, data: bytes) -> str:
    """``127.0.0.1:9``, ``[::1]:443`` or the family's name, from a ``struct sockaddr``."""
    with contextlib.suppress(OSError, ValueError, struct.error):
        port = struct.unpack("!H", data[2:4])[0]
        if family == socket.AF_INET:
            return f"{socket.inet_ntop(socket.AF_INET, data[4:8])}:{port}"
        if family == socket.AF_INET6:
            return f"[{socket.inet_ntop(socket.AF_INET6, data[8:24])}]:{port}"
    return family_name(family)


def _describe(name: str, args: list[int]) -> str:
    if name in PROBE_SYSCALLS:
        family = family_name(_signed(args[0]))
        return f"system call {name} (family {family}; only unix sockets are allowed)"
    if name == "clone":
        return "system call clone with new namespaces"
    return f"system call {name}"


__all__ = [
    "MAX_TASKS",
    "REFUSED",
    "Keeper",
    "build_filter",
    "guarded_proc_owner",
    "importable",
    "load",
    "receive_listener",
    "works",
]
