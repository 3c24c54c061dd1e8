"""The refusal policy: which refused operations are capability probes and which are violations.

Every operation the sandbox refuses fails inside the block with ``EPERM``, as the kernel would
answer it. What that means for the block's verdict depends on the operation:

- A **probe** asks for a capability and learns it is missing; refusing it is the whole answer.
  Creating a socket of any family but ``AF_UNIX`` is one (``urllib3`` binds ``::1`` at import
  to learn whether the machine has IPv6); so is connecting natively to a unix socket outside
  the block's folder (the C library asks ``nscd`` or ``sssd`` that way on its own; whatever
  listens there, ``docker.sock`` included, never hears from the block). A refused probe is
  recorded as a **note** on the
  result; the block passes or fails on its own merits. Only when the refusal is what makes
  the block fail (the ``EPERM`` escapes from the block's code, or is the cause or context of
  the exception that does) is the block a ``sandbox-violation`` naming the probe.
- Starting a process from an installed library's own module code while it is imported is a
  probe too (matplotlib runs ``fc-list`` at import to list the system's fonts when it finds no
  font cache, and the child's home is empty): no code of the block stands between the import
  machinery and the call (:func:`library_import`). The block passes or fails on its own
  merits, as with a socket probe.
- Everything else is an **attack in itself** and stays a ``sandbox-violation`` even when the
  block catches the error: writes outside the block's folder, signals to other processes,
  ``execve``, ``ptrace``, ``setns``, ``mount``, another process's ``/proc`` entries,
  ``connect``/``sendto`` to a network address, name lookups, a fork bomb.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sysconfig
from types import FrameType

PROBE_EVENTS = frozenset({"socket.__new__"})
"""Python audit events whose refusal is a probe (a socket of a non-unix family)."""
PROBE_SYSCALLS = frozenset({"socket", "socketpair"})
"""System calls whose refusal is a probe (the seccomp filter only stops non-unix families);
``connect``/``sendto`` to a unix socket outside the folder are probes too (the keeper says)."""
REFUSED_ERRNO = errno.EPERM
"""What a refused operation fails with, from Python (``PermissionError``) or native code."""


class DecidedByViolation(BaseException):
    """Raised where a block sleeps after a violation (a retry loop waiting on what the sandbox
    refused: nothing it waits for can come, and the violation already decided the verdict).
    A ``BaseException``: the block's own ``except Exception`` does not swallow it."""


def escaped(error: BaseException | None, *, limit: int = 32) -> bool:
    """Whether a refusal made ``error``: it, or an exception it was raised from or while
    handling, is an ``OSError`` with :data:`REFUSED_ERRNO`."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen and len(seen) < limit:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno == REFUSED_ERRNO:
            return True
        error = error.__cause__ or error.__context__
    return False


BLOCK_MODULE = "nnrag_block"
"""The module name a block file runs as in the sandbox child."""
_IMPORTING = frozenset({"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"})


def library_import(frame: FrameType | None, folder: str) -> str | None:
    """Where an installed library's module code, being imported, made the call that raised
    an audit event (``matplotlib.font_manager line 261``), from the innermost frame outwards;
    ``None`` when code of the block made it or reached it.

    Walking out from ``frame``, frames of the standard library are passed over; every other
    frame up to the import machinery must be a library's: a file on disk outside the block's
    ``folder``, not the block file (:data:`BLOCK_MODULE`), not made at run time
    (``<string>``). Reaching the import machinery that way is what makes it the library's
    import; reaching the block's code first, or no import, is the block's doing.
    """
    stdlib = _standard_library()
    where: str | None = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename in _IMPORTING:
            return where
        if not _in_standard_library(filename, stdlib):
            name = frame.f_globals.get("__name__")
            if (
                name == BLOCK_MODULE
                or not os.path.isabs(filename)
                or filename == folder
                or filename.startswith(folder + os.sep)
                or not os.path.isfile(filename)
            ):
                return None
            where = where or f"{name} line {frame.f_lineno}"
        frame = frame.f_back
    return None


def _standard_library() -> tuple[str, tuple[str, ...]]:
    """The standard library's folder and the installed-package folders (a system install keeps
    ``site-packages`` inside the standard library's folder)."""
    paths = sysconfig.get_paths()
    return paths["stdlib"], tuple({paths["purelib"], paths["platlib"]})


def _in_standard_library(filename: str, stdlib: tuple[str, tuple[str, ...]]) -> bool:
    folder, installed = stdlib
    if filename.startswith("<frozen "):
        return True
    inside = filename.startswith(folder + os.sep)
    return inside and not any(filename.startswith(path + os.sep) for path in installed)


def note(what: str) -> str:
    """The note a handled probe leaves on the result."""
    return f"refused: {what} (the block handled the refusal)"


def family_name(family: object) -> str:
    """``AF_INET6`` for a socket family number (the number where it has no name)."""
    import socket

    if isinstance(family, int):
        with contextlib.suppress(ValueError):
            return socket.AddressFamily(family).name
    return str(family)


__all__ = [
    "BLOCK_MODULE",
    "PROBE_EVENTS",
    "PROBE_SYSCALLS",
    "REFUSED_ERRNO",
    "DecidedByViolation",
    "escaped",
    "family_name",
    "library_import",
    "note",
]
