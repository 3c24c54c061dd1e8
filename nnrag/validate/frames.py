"""Frames between the sandbox client, server and children: length-prefixed plain pickles."""

from __future__ import annotations

import io
import os
import pickle
import struct
from typing import Any, BinaryIO

Message = dict[str, Any]
_HEADER = struct.Struct("!Q")


def write_frame(fd: int, message: object) -> None:
    """Send one length-prefixed pickle over a pipe file descriptor."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exact(stream: BinaryIO, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = stream.read(size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def read_frame(stream: BinaryIO) -> object | None:
    """Read one frame from a blocking stream; ``None`` at end of file."""
    header = _read_exact(stream, _HEADER.size)
    if header is None:
        return None
    data = _read_exact(stream, _HEADER.unpack(header)[0])
    return None if data is None else _PlainUnpickler(io.BytesIO(data)).load()


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain data only: a frame naming any class or function is refused.

    Frames from a child are untrusted (block code can write to the pipe), and unpickling a
    global would run code chosen by the block in the warm parent.
    """

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"frame refers to {module}.{name}, not plain data")


def _plain_frame(data: bytes) -> Message:
    """One child frame as a message; anything but a plain ``dict`` becomes a ``refused`` one."""
    try:
        message = _PlainUnpickler(io.BytesIO(data)).load()
    except Exception as error:  # malformed or hostile bytes: report, never raise
        return {"kind": "refused", "message": f"the block wrote an unreadable frame ({error})"}
    if not isinstance(message, dict):
        return {"kind": "refused", "message": "the block wrote a frame that is not a message"}
    return message


def _split_frames(buffer: bytearray) -> list[Message]:
    """Remove and return every complete frame (from a child) at the start of ``buffer``."""
    out: list[Message] = []
    while len(buffer) >= _HEADER.size:
        (size,) = _HEADER.unpack_from(buffer)
        if len(buffer) < _HEADER.size + size:
            break
        out.append(_plain_frame(bytes(buffer[_HEADER.size : _HEADER.size + size])))
        del buffer[: _HEADER.size + size]
    return out


def _plain_key(key: object) -> object:
    found = plain(key)
    return (
        found if isinstance(found, (str, int, float, bool, tuple)) or found is None else str(found)
    )


def plain(value: object, depth: int = 0) -> object:
    """``value`` as plain data (what :class:`_PlainUnpickler` accepts); other objects as repr."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, (str, int, float, bytes)):  # str or int enums of the block, numpy ints
        kind = next(t for t in (bool, str, int, float, bytes) if isinstance(value, t))
        return str.__str__(value) if kind is str else kind(value)  # type: ignore[arg-type]  # kind is the builtin the value is an instance of
    if depth > 20:
        return "..."
    if isinstance(value, (list, tuple)):
        items = [plain(v, depth + 1) for v in value]
        return items if type(value) is list else tuple(items)
    if isinstance(value, dict):
        return {_plain_key(k): plain(v, depth + 1) for k, v in value.items()}
    try:
        return repr(value)[:200]
    except Exception:
        return f"<{type(value).__name__}>"
