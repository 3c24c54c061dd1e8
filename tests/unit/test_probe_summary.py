"""How the sandbox turns a child's messages and exit status into a result (pure logic)."""

from __future__ import annotations

import enum
import io
import os
import pickle
import re
import signal
from typing import Any

import pytest

from nnrag.validate.frames import (
    BlockReply,
    BlockRequest,
    MalformedMessage,
    _plain_frame,
    plain,
    read_frame,
    write_frame,
)
from nnrag.validate.replies import summarize

STAGED: list[dict[str, Any]] = [
    {"kind": "running", "stage": "import"},
    {"kind": "stage", "stage": "import", "seconds": 0.01},
    {"kind": "running", "stage": "instantiate"},
]


def signalled(sig: int) -> int:
    """A wait status for a process killed by ``sig``."""
    return sig


def exited(code: int) -> int:
    return code << 8


def test_complete_result_wins() -> None:
    final = {"kind": "result", "stage_reached": "forward", "category": None, "timings": {"x": 1}}
    result = summarize([*STAGED, final], status=exited(0), timed_out=False)
    assert result.stage_reached == "forward"
    assert result.category is None
    assert result.timings == {"import": 0.01, "x": 1}


def test_timeout_names_the_running_stage() -> None:
    result = summarize(STAGED, status=signalled(signal.SIGKILL), timed_out=True)
    assert (result.failed_stage, result.category) == ("instantiate", "timeout")
    assert result.stage_reached == "import"


def test_segfault_is_a_crash_with_stderr() -> None:
    stderr = "Fatal Python error: Segmentation fault\n  File block.py, line 3\n"
    result = summarize(STAGED, status=signalled(signal.SIGSEGV), timed_out=False, stderr=stderr)
    assert result.category == "crash"
    assert "SIGSEGV" in result.message
    assert "Segmentation fault" in result.message


def test_sigkill_without_timeout_is_memory() -> None:
    result = summarize(STAGED, status=signalled(signal.SIGKILL), timed_out=False)
    assert result.category == "memory"


def test_an_error_escaping_the_probe_is_an_internal_error_unless_memory_ran_out() -> None:
    fatal = {"kind": "fatal", "message": "KeyError('x')"}
    result = summarize([*STAGED, fatal], status=exited(70), timed_out=False)
    assert (result.failed_stage, result.category) == ("instantiate", "internal-error")
    out_of_memory = {"kind": "fatal", "message": "MemoryError()"}
    result = summarize([*STAGED, out_of_memory], status=exited(70), timed_out=False)
    assert (result.failed_stage, result.category) == ("instantiate", "memory")


def test_cpu_limit_is_a_timeout() -> None:
    result = summarize(STAGED, status=signalled(signal.SIGXCPU), timed_out=False)
    assert result.category == "timeout"


def test_silent_exit_is_a_crash() -> None:
    result = summarize(STAGED[:1], status=exited(0), timed_out=False)
    assert (result.failed_stage, result.category) == ("import", "crash")
    assert "no result" in result.message


def test_frames_round_trip_through_a_pipe() -> None:
    read_fd, write_fd = os.pipe()
    try:
        write_frame(write_fd, {"kind": "stage", "data": b"x" * 1000})
        write_frame(write_fd, [1, 2, 3])
        os.close(write_fd)
        with io.FileIO(read_fd, "rb", closefd=False) as stream:
            assert read_frame(stream) == {"kind": "stage", "data": b"x" * 1000}
            assert read_frame(stream) == [1, 2, 3]
            assert read_frame(stream) is None
    finally:
        os.close(read_fd)


class _Foreign:
    # a global no other test patches (Ray, once imported in the same worker, replaces print)
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.path.basename, ("ran in the parent",))


def test_frames_with_globals_are_refused_not_run() -> None:
    data = pickle.dumps({"kind": "result", "x": _Foreign()})
    refused = _plain_frame(data)
    assert refused["kind"] == "refused"
    assert "path.basename" in refused["message"]
    assert _plain_frame(b"garbage")["kind"] == "refused"
    assert _plain_frame(pickle.dumps([1, 2]))["kind"] == "refused"
    plain_message = {"kind": "stage", "stage": "import", "seconds": 0.5, "set": frozenset({1})}
    assert _plain_frame(pickle.dumps(plain_message)) == plain_message


def test_refused_frames_make_the_result_a_violation() -> None:
    messages: list[dict[str, Any]] = [
        {"kind": "running", "stage": "import"},
        {"kind": "refused", "message": "the block wrote an unreadable frame (x)"},
        {"kind": "result", "stage_reached": "forward", "failed_stage": None, "category": None},
    ]
    result = summarize(messages, status=0, timed_out=False)
    assert (result.failed_stage, result.category) == ("import", "sandbox-violation")


class _Mode(str, enum.Enum):
    UP = "up"


class _Level(enum.IntEnum):
    ONE = 1


def test_plain_unwraps_str_and_int_subclasses() -> None:
    cleaned = plain({"mode": _Mode.UP, "level": _Level.ONE, "flag": True})
    assert cleaned == {"mode": "up", "level": 1, "flag": True}
    assert [type(v) for v in cleaned.values()] == [str, int, bool]
    assert _plain_frame(pickle.dumps(cleaned)) == cleaned


def test_plain_turns_foreign_objects_into_text() -> None:
    value = {"kwargs": {"mode": _Foreign(), "sizes": (1, 2)}, ("a", "b"): [None, 1.5]}
    cleaned = plain(value)
    assert cleaned == {
        "kwargs": {"mode": repr(value["kwargs"]["mode"]), "sizes": (1, 2)},  # type: ignore[index]  # the summary is JSON-shaped dict[str, object]
        ("a", "b"): [None, 1.5],
    }
    assert _plain_frame(pickle.dumps(cleaned)) == cleaned


# --------------------------------------------------------------------------- typed messages


def test_request_and_reply_cross_as_plain_data_and_come_back_equal() -> None:
    request = BlockRequest(
        path="/b.py", class_name="Block", depth="import", harvested=({"a": 1},), seed=3
    )
    data = request.to_plain()
    assert _plain_frame(pickle.dumps(data)) == data  # plain: no class named in the frame
    assert BlockRequest.from_plain(data) == request
    reply = BlockReply(stage_reached="forward", timings={"forward": 0.5}, frames=("x.py:3",))
    assert BlockReply.from_plain(reply.to_plain()) == reply


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([1, 2], "reply: a list, not a dict of fields"),
        ({"stage_reached": 3}, "reply: stage_reached is int 3, expected str or None"),
        ({"stage_reached": "flying"}, "reply: stage_reached 'flying' is not a stage"),
        ({"category": "oops"}, "reply: category 'oops' is not a category"),
        ({"timings": {"forward": "slow"}}, "reply: timings must map stage names to seconds"),
        ({"verdict": "pass"}, "reply: unknown field 'verdict'"),
        ({"harvest": [1]}, "reply: harvest must be a list of records"),
    ],
)
def test_a_malformed_reply_names_what_is_wrong(data: object, words: str) -> None:
    with pytest.raises(MalformedMessage, match=re.escape(words)):
        BlockReply.from_plain(data)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"class_name": "Block"}, "request: no 'path'"),
        ({"path": "/b.py", "class_name": "Block", "timeout_s": True}, "timeout_s is bool"),
        ({"path": "/b.py", "class_name": "Block", "depth": "deep"}, "depth 'deep' is not a stage"),
    ],
)
def test_a_malformed_request_names_what_is_wrong(data: object, words: str) -> None:
    with pytest.raises(MalformedMessage, match=re.escape(words)):
        BlockRequest.from_plain(data)


def test_a_malformed_result_frame_from_the_block_is_a_crash() -> None:
    final = {"kind": "result", "stage_reached": "forward", "category": "passed-honestly"}
    result = summarize([*STAGED, final], status=exited(0), timed_out=False)
    assert result.category == "crash"
    assert "category 'passed-honestly' is not a category" in result.message
    result = summarize([{"kind": "stage"}], status=exited(0), timed_out=False)
    assert result.category == "crash"
    assert "malformed message (KeyError" in result.message


def test_a_malformed_reply_from_the_server_is_an_internal_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nnrag.validate.sandbox import Sandbox

    box = Sandbox()
    with open(os.devnull, "wb") as sink:
        box._requests = sink  # type: ignore[assignment]  # a writable stand-in for the server's pipe
        monkeypatch.setattr(box, "start", lambda: None)
        monkeypatch.setattr(box, "_receive", lambda timeout_s: {"stage_reached": "forward", "x": 1})
        reply = box.run(BlockRequest(path="/b.py", class_name="Block"))
        box._requests = None
    assert reply.category == "internal-error"
    assert reply.message == "the sandbox server sent a malformed reply: reply: unknown field 'x'"


# --------------------------------------------------------------------------- refusal policy

SOCKET = "system call socket (family AF_INET6; only unix sockets are allowed)"
PASSED = {"kind": "result", "stage_reached": "forward", "category": None, "timings": {}}
FAILED = {
    "kind": "result",
    "stage_reached": "import",
    "failed_stage": "instantiate",
    "category": "runtime-error",
    "message": "OSError: [Errno 1] Operation not permitted",
    "timings": {},
}


def test_a_handled_probe_is_a_note() -> None:
    native = {"kind": "refused", "message": SOCKET, "probe": True}
    python = {**PASSED, "probes": ["socket.__new__ (family AF_INET6; ...)"], "denied": False}
    result = summarize([*STAGED, native, python], status=exited(0), timed_out=False)
    assert result.category is None
    assert result.stage_reached == "forward"
    assert result.notes == (
        f"refused: {SOCKET} (the block handled the refusal)",
        "refused: socket.__new__ (family AF_INET6; ...) (the block handled the refusal)",
    )


def test_a_probe_the_block_fails_on_is_a_violation() -> None:
    native = {"kind": "refused", "message": SOCKET, "probe": True}
    result = summarize(
        [*STAGED, native, {**FAILED, "denied": True}], status=exited(0), timed_out=False
    )
    assert (result.category, result.failed_stage) == ("sandbox-violation", "instantiate")
    assert result.message == (
        f"refused: {SOCKET}; the block failed on it: OSError: [Errno 1] Operation not permitted"
    )
    assert result.notes == ()


def test_a_failure_for_another_reason_keeps_its_category_and_the_note() -> None:
    python = {**FAILED, "probes": ["socket.__new__ (family AF_INET)"], "denied": False}
    result = summarize([*STAGED, python], status=exited(0), timed_out=False)
    assert result.category == "runtime-error"
    note = "refused: socket.__new__ (family AF_INET) (the block handled the refusal)"
    assert result.notes == (note,)


def test_an_attack_is_a_violation_even_when_caught_and_names_every_refusal() -> None:
    probe = {"kind": "refused", "message": SOCKET, "probe": True}
    connect = "system call connect to 127.0.0.1:9 (a network address)"
    attack = {"kind": "refused", "message": connect}
    result = summarize([*STAGED, probe, attack, PASSED], status=exited(0), timed_out=False)
    assert result.category == "sandbox-violation"
    assert result.message == f"refused: {SOCKET}; {connect}"


def test_malformed_probes_are_a_crash() -> None:
    for bad in ({"probes": "socket"}, {"probes": [1]}, {"denied": "yes"}):
        result = summarize([*STAGED, {**PASSED, **bad}], status=exited(0), timed_out=False)
        assert result.category == "crash", bad
        assert "malformed" in result.message


def test_a_refusal_escapes_through_cause_and_context_only() -> None:
    from nnrag.validate.refusals import escaped

    refused = PermissionError(1, "refused")
    assert escaped(refused)
    assert escaped(_raised(refused, RuntimeError("no network"), cause=True))
    assert escaped(_raised(refused, ValueError("while handling it"), cause=False))
    assert not escaped(PermissionError(13, "denied"))  # EACCES: not a refusal of the sandbox
    assert not escaped(ValueError("a shape problem"))
    assert not escaped(None)


def _raised(first: BaseException, second: BaseException, *, cause: bool) -> BaseException:
    """``second`` as raised while handling ``first`` (``from first`` or ``from None``)."""
    try:
        try:
            raise first
        except BaseException as error:
            raise second from (error if cause else None)
    except BaseException as error:
        return error
    raise AssertionError("unreachable")
