"""Frames between the sandbox client, server and children: length-prefixed plain pickles.

What crosses a process boundary is plain data (dicts, lists, strings, numbers): a frame naming
a class is refused on arrival. The request and the reply are typed on each side
(:class:`BlockRequest`, :class:`BlockReply`, frozen dataclasses): sent as plain dicts by
``to_plain`` and checked field by field by ``from_plain`` on arrival, which raises
:class:`MalformedMessage` naming the field and what was wrong.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, BinaryIO

from nnrag.model import CATEGORIES, SEARCH_CPU_S, STAGES

Message = dict[str, Any]
_HEADER = struct.Struct("!Q")


class MalformedMessage(ValueError):
    """A request or reply that is not what the other side must send; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockRequest:
    """What the client asks the sandbox: run one block file to ``depth``."""

    path: str
    class_name: str
    module: str = ""
    """The module the block comes from (``mmdet.models.necks.fpn``; empty: unknown)."""
    depth: str = "forward"
    timeout_s: float = 60.0
    search_cpu_s: float = SEARCH_CPU_S
    """CPU seconds (of the child) the constructor/input search may use."""
    hints: Mapping[str, Any] | None = None
    """Constructor arguments and inputs (``stages.hints_request``)."""
    harvested: tuple[Mapping[str, Any], ...] = ()
    harvest: bool = False
    source_packages: tuple[str, ...] = ()
    reached: str | None = None
    """The last static stage the block passed before the sandbox."""
    seed: int = 0
    plugins: Mapping[str, Any] = field(default_factory=dict)
    replay: Mapping[str, Any] | None = None
    meta_screen: str = "auto"

    def to_plain(self) -> Message:
        """The request as plain data (for a frame, and for the probe in the child)."""
        return _plain_dict(self)

    @classmethod
    def from_plain(cls, data: object) -> BlockRequest:
        """Check a received request; :class:`MalformedMessage` names what is wrong."""
        found = _checked(data, "request", _REQUEST_FIELDS)
        if not all(isinstance(record, dict) for record in found["harvested"]):
            raise MalformedMessage("request: harvested must be a list of records (dicts)")
        found["harvested"] = tuple(found["harvested"])
        found["source_packages"] = tuple(found["source_packages"])
        if found["depth"] not in STAGES:
            raise MalformedMessage(f"request: depth {found['depth']!r} is not a stage")
        return cls(**found)


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockReply:
    """What the sandbox answers for one block: how far it got and why it stopped."""

    stage_reached: str | None = None
    failed_stage: str | None = None
    category: str | None = None
    message: str = ""
    timings: Mapping[str, float] = field(default_factory=dict)
    harvest: tuple[Mapping[str, Any], ...] = ()
    recipe: Mapping[str, Any] | None = None
    frames: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Refused probes the block handled (:mod:`nnrag.validate.refusals`)."""

    def to_plain(self) -> Message:
        """The reply as plain data (for a frame)."""
        return _plain_dict(self)

    @classmethod
    def from_plain(cls, data: object) -> BlockReply:
        """Check a received reply; :class:`MalformedMessage` names what is wrong."""
        found = _checked(data, "reply", _REPLY_FIELDS)
        for key in ("stage_reached", "failed_stage"):
            if found[key] is not None and found[key] not in STAGES:
                raise MalformedMessage(f"reply: {key} {found[key]!r} is not a stage")
        if found["category"] is not None and found["category"] not in CATEGORIES:
            raise MalformedMessage(f"reply: category {found['category']!r} is not a category")
        timings = found["timings"]
        if not all(isinstance(k, str) and _is_number(v) for k, v in timings.items()):
            raise MalformedMessage("reply: timings must map stage names to seconds")
        for key in ("frames", "notes"):
            if not all(isinstance(text, str) for text in found[key]):
                raise MalformedMessage(f"reply: {key} must be strings")
        if not all(isinstance(record, dict) for record in found["harvest"]):
            raise MalformedMessage("reply: harvest must be a list of records (dicts)")
        found.update(
            harvest=tuple(found["harvest"]),
            frames=tuple(found["frames"]),
            notes=tuple(found["notes"]),
        )
        return cls(**found)

    @classmethod
    def failure(cls, category: str, message: str) -> BlockReply:
        """A reply for a block the sandbox could not run to a verdict."""
        return cls(category=category, message=message)


_NONE = type(None)
_REQUEST_FIELDS: dict[str, tuple[type, ...]] = {
    "path": (str,),
    "class_name": (str,),
    "module": (str,),
    "depth": (str,),
    "timeout_s": (int, float),
    "search_cpu_s": (int, float),
    "hints": (dict, _NONE),
    "harvested": (list, tuple),
    "harvest": (bool,),
    "source_packages": (list, tuple),
    "reached": (str, _NONE),
    "seed": (int,),
    "plugins": (dict,),
    "replay": (dict, _NONE),
    "meta_screen": (str,),
}
_REPLY_FIELDS: dict[str, tuple[type, ...]] = {
    "stage_reached": (str, _NONE),
    "failed_stage": (str, _NONE),
    "category": (str, _NONE),
    "message": (str,),
    "timings": (dict,),
    "harvest": (list, tuple),
    "recipe": (dict, _NONE),
    "frames": (list, tuple),
    "notes": (list, tuple),
}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _checked(data: object, what: str, kinds: Mapping[str, tuple[type, ...]]) -> Message:
    """The fields of ``data`` (a dict) with the types ``kinds`` names; defaults where absent."""
    if not isinstance(data, dict):
        raise MalformedMessage(f"{what}: a {type(data).__name__}, not a dict of fields")
    unknown = sorted(str(key) for key in data if key not in kinds)
    if unknown:
        raise MalformedMessage(f"{what}: unknown field {', '.join(map(repr, unknown))}")
    found: Message = {}
    for name, allowed in kinds.items():
        if name not in data:
            continue  # the dataclass default, or a TypeError below naming the missing field
        value = data[name]
        numeric = int in allowed
        if not isinstance(value, allowed) or (numeric and isinstance(value, bool)):
            expected = " or ".join("None" if kind is _NONE else kind.__name__ for kind in allowed)
            raise MalformedMessage(
                f"{what}: {name} is {type(value).__name__} {value!r:.60}, expected {expected}"
            )
        found[name] = value
    required = {"path", "class_name"} if what == "request" else set()
    missing = sorted(required - set(found))
    if missing:
        raise MalformedMessage(f"{what}: no {', '.join(map(repr, missing))}")
    defaults = {f.name: getattr(_DEFAULTS[what], f.name) for f in fields(_DEFAULTS[what])}
    return {**{k: v for k, v in defaults.items() if k in kinds}, **found}


def _plain_dict(message: BlockRequest | BlockReply) -> Message:
    data = asdict(message)
    for key, value in data.items():
        if isinstance(value, tuple):
            data[key] = list(value)
        elif isinstance(value, Mapping):
            data[key] = dict(value)
    return data


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


_DEFAULTS: dict[str, BlockRequest | BlockReply] = {
    "request": BlockRequest(path="", class_name=""),
    "reply": BlockReply(),
}
