"""Kernel isolation of the sandbox: user, PID, mount, IPC and network namespaces, Landlock.

The warm server enters new user, PID, mount, IPC and network namespaces when it starts
(:func:`enter_server_namespaces`) and becomes PID 1 of its PID namespace (:func:`become_init`):
a block sees no process outside it, so it can neither signal nor trace the client, and the
kernel only delivers to PID 1 the signals it handles. Its own uid maps to ``65534`` inside.
Each block child then enters its own mount namespace (:func:`confine_mounts`: every mount
read-only, its folder a size-limited tmpfs), drops every capability and restricts itself with
Landlock; the server kills every process left in its PID namespace after each block.

Each layer is optional: where the kernel refuses one, blocks run without it and
:func:`probe_block_layers` says which, once per run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
INSIDE_ID = 65534
"""The uid and gid a block has inside its user namespace (``nobody``, no capability)."""
LAYERS = ("namespaces", "seccomp", "landlock")
"""The kernel isolation layers, in the order the run summary names them."""

_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID = 0x1, 0x2
_AT_RECURSIVE = 0x8000
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture (new syscall table)
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_PR_SET_NO_NEW_PRIVS = 38
_LANDLOCK_WRITE_FILE = 1 << 1
_LANDLOCK_WRITES = (
    (1 << 1) | (0b111111111 << 4),  # ABI 1: write file, remove dir/file, make dir/file/...
    1 << 13,  # ABI 2: refer (link or rename across folders)
    1 << 14,  # ABI 3: truncate
    1 << 15,  # ABI 5: ioctl on devices
)
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_SCOPE_SIGNAL = 0x2
_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET = 0x1
_LANDLOCK_ACCESS_NET = 0x3  # bind and connect TCP
_CAP_VERSION_3 = 0x20080522


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _RulesetAttr(ctypes.Structure):
    """``struct landlock_ruleset_attr`` up to ABI 6."""

    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # struct landlock_path_beneath_attr is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


# --------------------------------------------------------------------------- server side


def enter_server_namespaces(*, network: bool) -> None:
    """Unshare user, PID, mount and IPC (and network) namespaces; map our uid to 65534.

    Raises ``OSError`` where the kernel refuses (no unprivileged user namespaces).
    """
    uid, gid = os.geteuid(), os.getegid()
    libc = _libc()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
    _check(libc.unshare(flags | (CLONE_NEWNET if network else 0)), "unshare")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{INSIDE_ID} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{INSIDE_ID} {gid} 1")
    _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount --make-rprivate /")


def namespaces_work(*, network: bool) -> bool:
    """Whether :func:`enter_server_namespaces` and a ``/proc`` of its own succeed here.

    Tried in a throwaway child first: a half-entered user namespace (unshared, but the uid map
    refused) cannot be left, and would leave the server running as an unmapped user.
    """
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            enter_server_namespaces(network=network)
            inner = os.fork()
            if inner == 0:
                ok = False
                with contextlib.suppress(OSError):
                    mount_proc()
                    ok = True
                os._exit(0 if ok else 1)
            _, status = os.waitpid(inner, 0)
            code = 0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def become_init(close: tuple[int, ...]) -> int:
    """Fork; the child returns as PID 1 of the new PID namespace with its own ``/proc``.

    Returns the child's process id as seen from outside (by the client).

    The parent closes ``close`` (its copies of the client's pipes), waits, and exits as the
    child did: killing it (the process the client started) kills the child by its
    parent-death signal, and with PID 1 every process of the namespace.
    """
    pid = os.fork()
    if pid:
        code = 70
        try:
            for fd in close:
                os.close(fd)
            code = wait_and_mirror(pid)
        finally:
            os._exit(code)
    _set_parent_death_signal()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # PID 1 gets no signal it does not handle
    status = Path("/proc/self/status").read_text().splitlines()  # still the outer /proc
    outer = int(next(line for line in status if line.startswith("NSpid:")).split()[1])
    mount_proc()
    return outer


def kill_namespace() -> None:
    """From PID 1: kill every other process of the PID namespace (a block's leftovers)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)


# --------------------------------------------------------------------------- block side


def confine_mounts(tmp: Path, *, size_mb: int) -> None:
    """In a new mount namespace: every mount read-only, ``tmp`` a private tmpfs of ``size_mb``.

    The tmpfs is owned by :data:`INSIDE_ID` and bounds what the whole block can write.
    """
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare mount namespace")
    read_only = _MountAttr(
        attr_set=_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID,  # not nodev: /dev/null stays usable
        propagation=_MS_PRIVATE,
    )
    _check(
        libc.syscall(
            _SYS_MOUNT_SETATTR,
            -100,  # AT_FDCWD
            b"/",
            _AT_RECURSIVE,
            ctypes.byref(read_only),
            ctypes.sizeof(read_only),
        ),
        "mount_setattr / read-only",
    )
    options = f"size={size_mb}m,mode=0700,uid={INSIDE_ID},gid={INSIDE_ID}".encode()
    _check(
        libc.mount(b"tmpfs", os.fsencode(tmp), b"tmpfs", _MS_NOSUID | _MS_NODEV, options),
        f"mount tmpfs on {tmp}",
    )


def mount_proc() -> None:
    """Mount a ``/proc`` of this PID namespace: other processes (the server) disappear."""
    _check(
        _libc().mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None),
        "mount /proc",
    )


def drop_capabilities() -> None:
    """Clear every capability set (the block keeps none, even inside its user namespace)."""
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc().capset(header, data), "capset")


def landlock_abi() -> int:
    """The Landlock ABI version of this kernel, 0 where there is none."""
    libc = _libc()
    version = libc.syscall(
        _SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), _LANDLOCK_CREATE_RULESET_VERSION
    )
    return max(int(version), 0)


def apply_landlock(tmp: Path) -> None:
    """Allow writes only under ``tmp`` (and to ``/dev/null``); scope signals and TCP.

    Reads stay as the mounts allow. From ABI 4 on no TCP bind or connect is allowed; from ABI 6
    on signals and abstract unix sockets reach only processes of the same Landlock domain (the
    block's own). Direct system calls: the ``landlock`` package (1.0.0.dev5) builds ABI 1
    rulesets only, without the network and scope fields.
    """
    abi = landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not enabled in this kernel")
    writes = _LANDLOCK_WRITES[0] | (_LANDLOCK_WRITES[1] if abi >= 2 else 0)
    writes |= (_LANDLOCK_WRITES[2] if abi >= 3 else 0) | (_LANDLOCK_WRITES[3] if abi >= 5 else 0)
    attr = _RulesetAttr(handled_access_fs=writes)
    if abi >= 4:
        attr.handled_access_net = _LANDLOCK_ACCESS_NET
    if abi >= 6:
        attr.scoped = _LANDLOCK_SCOPE_SIGNAL | _LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    libc = _libc()
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    _check(0 if ruleset >= 0 else -1, "landlock_create_ruleset")
    try:
        for path, access in ((tmp, writes), (Path(os.devnull), _LANDLOCK_WRITE_FILE)):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneath(allowed_access=access, parent_fd=fd)
                _check(
                    libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0),
                    f"landlock_add_rule {path}",
                )
            finally:
                os.close(fd)
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def close_inherited(keep: tuple[int, ...]) -> None:
    """Close every descriptor above stderr except ``keep`` (the result pipe)."""
    high = 1 << 16
    with contextlib.suppress(OSError):
        high = max(high, int(os.sysconf("SC_OPEN_MAX")))
    start = 3
    for fd in sorted(keep):
        if fd >= start:
            os.closerange(start, fd)
            start = fd + 1
    os.closerange(start, high)


# --------------------------------------------------------------------------- both


def wait_and_mirror(pid: int) -> int:
    """Wait for ``pid``; exit code to use, or die of the same signal it died of."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70


def _set_parent_death_signal() -> None:
    _libc().prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def probe_block_layers(
    tmp: Path, *, namespaces: bool, seccomp_ok: Callable[[], bool]
) -> dict[str, bool]:
    """Which layers a block child gets on this kernel, found by a throwaway child."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        bits = 0
        try:
            os.close(read_fd)
            if namespaces:
                with contextlib.suppress(OSError):
                    confine_mounts(tmp, size_mb=1)
                    drop_capabilities()
                    bits |= 1
            with contextlib.suppress(Exception):
                apply_landlock(tmp)
                bits |= 2
            with contextlib.suppress(Exception):
                bits |= 4 if seccomp_ok() else 0
            os.write(write_fd, bytes([bits]))
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read(1)
    os.waitpid(pid, 0)
    bits = data[0] if data else 0
    return {"namespaces": bool(bits & 1), "seccomp": bool(bits & 4), "landlock": bool(bits & 2)}


__all__ = [
    "INSIDE_ID",
    "LAYERS",
    "apply_landlock",
    "become_init",
    "close_inherited",
    "confine_mounts",
    "drop_capabilities",
    "enter_server_namespaces",
    "kill_namespace",
    "landlock_abi",
    "mount_proc",
    "namespaces_work",
    "probe_block_layers",
    "wait_and_mirror",
]
