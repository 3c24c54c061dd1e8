"""How the sandbox turns a child's messages and exit status into a result (pure logic)."""

from __future__ import annotations

import io
import os
import signal

from nnrag.sandbox import read_frame, summarize, write_frame

STAGED = [
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
    assert result["stage_reached"] == "forward"
    assert result["category"] is None
    assert result["timings"] == {"import": 0.01, "x": 1}


def test_timeout_names_the_running_stage() -> None:
    result = summarize(STAGED, status=signalled(signal.SIGKILL), timed_out=True)
    assert (result["failed_stage"], result["category"]) == ("instantiate", "timeout")
    assert result["stage_reached"] == "import"


def test_segfault_is_a_crash_with_stderr() -> None:
    stderr = "Fatal Python error: Segmentation fault\n  File block.py, line 3\n"
    result = summarize(STAGED, status=signalled(signal.SIGSEGV), timed_out=False, stderr=stderr)
    assert result["category"] == "crash"
    assert "SIGSEGV" in result["message"]
    assert "Segmentation fault" in result["message"]


def test_sigkill_without_timeout_is_memory() -> None:
    result = summarize(STAGED, status=signalled(signal.SIGKILL), timed_out=False)
    assert result["category"] == "memory"


def test_cpu_limit_is_a_timeout() -> None:
    result = summarize(STAGED, status=signalled(signal.SIGXCPU), timed_out=False)
    assert result["category"] == "timeout"


def test_silent_exit_is_a_crash() -> None:
    result = summarize(STAGED[:1], status=exited(0), timed_out=False)
    assert (result["failed_stage"], result["category"]) == ("import", "crash")
    assert "no result" in result["message"]


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
