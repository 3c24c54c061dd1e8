"""Fault suite: blocks that hang, crash, escape or exhaust the sandbox; the run goes on."""

from __future__ import annotations

import os
import signal
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nnrag.model import ValidationResult
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import validate_file

pytestmark = pytest.mark.integration

SECRET = "NNRAG_TEST_SECRET_TOKEN"
TIMEOUT = 5.0

HEADER = """
import os
import sys
import time
import torch
from torch import nn
"""

TRIVIAL = """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)
"""


def forward_block(body: str, prelude: str = "") -> str:
    """A block with a linear layer whose forward runs ``body`` first."""
    body = textwrap.indent(textwrap.dedent(body).strip(), " " * 8)
    return (
        HEADER
        + textwrap.dedent(prelude)
        + f"""
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
{body}
        return self.lin(x)
"""
    )


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    os.environ[SECRET] = "hunter2"
    try:
        with Sandbox(memory_mb=512) as box:
            box.start()
            yield box
    finally:
        del os.environ[SECRET]


def descendants(pid: int) -> list[int]:
    """Live (non-zombie) descendants of ``pid``, from a /proc scan."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def run(
    sandbox: Sandbox, tmp_path: Path, code: str, name: str = "block", timeout_s: float = TIMEOUT
) -> ValidationResult:
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    return validate_file(
        path, block_id=f"t:{name}:Block", class_name="Block", timeout_s=timeout_s, sandbox=sandbox
    )


def settled_descendants(pid: int) -> list[int]:
    """Descendants of ``pid`` once the server's cleanup (after its reply) has had time to run."""
    for _ in range(100):
        found = descendants(pid)
        if not found:
            return found
        time.sleep(0.05)
    return descendants(pid)


def assert_run_goes_on(sandbox: Sandbox, tmp_path: Path, server: int | None) -> None:
    assert sandbox.pid == server, "the warm parent must survive"
    assert server is not None
    forks = sandbox.server_pid
    assert forks is not None
    assert settled_descendants(forks) == []
    assert descendants(server) in ([], [forks]), "only the server's PID 1 may be left"
    after = run(sandbox, tmp_path, HEADER + TRIVIAL, "trivial")
    assert after.passed, after.message
    assert settled_descendants(forks) == []


CASES = {
    "infinite-loop": (forward_block("while True:\n    pass"), "timeout", "forward"),
    "sleep": (forward_block("time.sleep(100)"), "timeout", "forward"),
    "segfault": (forward_block("import ctypes\nctypes.string_at(0)"), "crash", "forward"),
    "abort": (forward_block("os.abort()"), "crash", "forward"),
    "memory-bomb": (
        forward_block("hog = []\nwhile True:\n    hog.append(bytearray(64 * 1024 * 1024))"),
        "memory",
        "forward",
    ),
    "huge-alloc": (forward_block("torch.empty(1 << 40, dtype=torch.uint8)"), "memory", "forward"),
    "fork-bomb": (
        forward_block("for _ in range(8):\n    os.fork()"),
        "sandbox-violation",
        "forward",
    ),
    "socket-localhost": (
        forward_block(
            "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
            "except OSError:\n    pass"
        ),
        "sandbox-violation",
        "forward",
    ),
    "dns": (
        forward_block("import socket\nsocket.getaddrinfo('example.com', 80)"),
        "sandbox-violation",
        "forward",
    ),
    "subprocess": (
        forward_block("import subprocess\nsubprocess.run(['true'])"),
        "sandbox-violation",
        "forward",
    ),
    "os-system": (forward_block("os.system('true')"), "sandbox-violation", "forward"),
    "write-parent": (
        forward_block("open(os.path.join(os.getcwd(), '..', 'nnrag-escape.txt'), 'w').write('x')"),
        "sandbox-violation",
        "forward",
    ),
    "sys-exit-import": (HEADER + "sys.exit(3)\n" + TRIVIAL, "runtime-error", "import"),
    "os-exit-import": (HEADER + "os._exit(0)\n" + TRIVIAL, "crash", "import"),
    "keyboard-interrupt": (forward_block("raise KeyboardInterrupt"), "runtime-error", "forward"),
    "read-parent-environ": (
        forward_block("open(f'/proc/{os.getppid()}/environ', 'rb').read()"),
        "sandbox-violation",
        "forward",
    ),
    "kill-parent": (forward_block("os.kill(os.getppid(), 9)"), "sandbox-violation", "forward"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fault_becomes_a_result(sandbox: Sandbox, tmp_path: Path, case: str) -> None:
    code, category, stage = CASES[case]
    server = sandbox.pid
    # Filling 512 MB takes a few seconds on a loaded machine; the others fail fast or time out.
    timeout_s = 30.0 if category == "memory" else TIMEOUT
    result = run(sandbox, tmp_path, code, timeout_s=timeout_s)
    assert (result.category, result.failed_stage) == (category, stage), result.message
    assert not result.passed
    assert_run_goes_on(sandbox, tmp_path, server)


def test_hostile_frames_never_run_code_in_the_parent(sandbox: Sandbox, tmp_path: Path) -> None:
    """A block writing its own pickle to the result pipe cannot make the parent run code."""
    marker = tmp_path / "unpickled-in-parent.txt"
    prelude = f"""
    import pickle
    import struct

    class Payload:
        def __reduce__(self):
            return (open, ({str(marker)!r}, "w"))

    data = pickle.dumps({{"kind": "result", "stage_reached": "forward", "x": Payload()}})
    for fd in range(3, 64):
        try:
            os.write(fd, struct.pack("!Q", len(data)) + data)
        except OSError:
            pass
    """
    server = sandbox.pid
    result = run(sandbox, tmp_path, HEADER + textwrap.dedent(prelude) + TRIVIAL)
    assert not marker.exists()
    assert not result.passed
    assert result.category == "sandbox-violation", result.message
    assert "unreadable frame" in result.message
    assert_run_goes_on(sandbox, tmp_path, server)


def test_writes_outside_the_temp_folder_are_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    home = Path.home() / "nnrag-sandbox-escape.txt"
    other = tmp_path / "other-temp" / "escape.txt"
    other.parent.mkdir()
    server = sandbox.pid
    for target in (home, other):
        code = forward_block(f"open({str(target)!r}, 'w').write('x')")
        result = run(sandbox, tmp_path, code)
        assert result.category == "sandbox-violation", result.message
        assert not target.exists()
    assert_run_goes_on(sandbox, tmp_path, server)


def test_writes_inside_the_temp_home_pass(sandbox: Sandbox, tmp_path: Path) -> None:
    code = forward_block(
        "path = os.path.expanduser('~/scratch.txt')\nopen(path, 'w').write('x')\n"
        "assert open(path).read() == 'x'"
    )
    result = run(sandbox, tmp_path, code)
    assert result.passed, result.message


def test_environment_secret_is_absent(sandbox: Sandbox, tmp_path: Path) -> None:
    assert os.environ[SECRET] == "hunter2"
    code = forward_block(
        f"if {SECRET!r} in os.environ or 'hunter2' in repr(dict(os.environ)):\n"
        "    raise RuntimeError('secret leaked')\n"
        "assert os.environ['HOME'] == os.getcwd()"
    )
    result = run(sandbox, tmp_path, code)
    assert result.passed, result.message


def test_hundred_megabytes_of_stdout(sandbox: Sandbox, tmp_path: Path) -> None:
    server = sandbox.pid
    code = forward_block("line = 'x' * 1023\nfor _ in range(100 * 1024):\n    print(line)")
    result = run(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert_run_goes_on(sandbox, tmp_path, server)


def test_threads_that_never_join(sandbox: Sandbox, tmp_path: Path) -> None:
    server = sandbox.pid
    prelude = """
import threading

def spin():
    while True:
        time.sleep(0.05)
"""
    code = forward_block("threading.Thread(target=spin).start()", prelude)
    result = run(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert_run_goes_on(sandbox, tmp_path, server)


def test_native_forks_are_killed(sandbox: Sandbox, tmp_path: Path) -> None:
    """Processes forked behind the audit hook's back (libc fork) do not survive the block."""
    server = sandbox.pid
    code = forward_block(
        "import ctypes\nlibc = ctypes.CDLL(None)\nfor _ in range(3):\n"
        "    if libc.fork() == 0:\n        libc.setsid()\n        time.sleep(1000)"
    )
    result = run(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert_run_goes_on(sandbox, tmp_path, server)


def test_parent_is_restarted_when_it_dies(sandbox: Sandbox, tmp_path: Path) -> None:
    server = sandbox.pid
    assert server is not None
    os.kill(server, signal.SIGKILL)
    result = run(sandbox, tmp_path, HEADER + TRIVIAL, "after-kill")
    assert result.passed, result.message
    assert sandbox.pid not in (None, server)
    assert sandbox.restarts >= 1


def test_spawn_fallback_warns_once_and_still_validates(tmp_path: Path) -> None:
    with Sandbox(spawn=True) as box:
        with pytest.warns(RuntimeWarning, match="falls back"):
            box.start()
        assert box.info["mode"] == "spawn"
        first = run(box, tmp_path, HEADER + TRIVIAL, "spawned")
        assert first.passed, first.message
        crashed = run(box, tmp_path, CASES["abort"][0], "spawned-abort")
        assert crashed.category == "crash"
        server = box.pid
        assert server is not None
        assert settled_descendants(server) == []


def test_a_forward_failure_keeps_the_inputs_it_tried(sandbox: Sandbox, tmp_path: Path) -> None:
    """The recipe of a failure names the constructor arguments and the last inputs tried."""
    result = run(sandbox, tmp_path, forward_block("raise ValueError('wrong shape')"))
    assert (result.failed_stage, result.category) == ("forward", "input-shape")
    assert result.recipe is not None
    assert result.recipe.inputs, result.recipe


def test_importing_its_own_source_by_name_is_a_source_import(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Installed here or not, a block that imports its own source at run time is not closed."""
    path = tmp_path / "selfimport.py"
    path.write_text(
        forward_block("importlib.import_module('tabnanny')", prelude="import importlib\n")
    )
    result = validate_file(
        path,
        block_id="t:selfimport:Block",
        class_name="Block",
        timeout_s=TIMEOUT,
        sandbox=sandbox,
        source_packages=frozenset({"tabnanny"}),
    )
    assert (result.failed_stage, result.category) == ("forward", "source-import"), result.message
    assert "'tabnanny'" in result.message


def test_a_refusal_names_only_its_own_cause(sandbox: Sandbox, tmp_path: Path) -> None:
    target = Path.home() / "nnrag-sandbox-refused.txt"
    code = forward_block(
        f"try:\n    open({str(target)!r}, 'w')\nexcept PermissionError:\n    pass\n"
        f"try:\n    open({str(target)!r}, 'w')\nexcept PermissionError:\n    pass\n"
        "raise ValueError('an unrelated shape problem')"
    )
    result = run(sandbox, tmp_path, code, "refusal")
    assert result.category == "sandbox-violation", result.message
    assert result.message == f"refused: writing {target}"


# A capability probe, as urllib3 makes one at import (``_has_ipv6``): refused, handled.
IPV6_PROBE = """
import socket
try:
    probe = socket.socket(socket.AF_INET6)
    probe.bind(("::1", 0))
    HAS_IPV6 = True
except Exception:
    HAS_IPV6 = False
"""
PROBE_REFUSED = "socket.__new__ (family AF_INET6; only unix sockets are allowed)"


def test_a_handled_socket_probe_passes_with_a_note(sandbox: Sandbox, tmp_path: Path) -> None:
    server = sandbox.pid
    result = run(sandbox, tmp_path, HEADER + IPV6_PROBE + TRIVIAL, "ipv6_probe")
    assert result.passed, result.message
    assert result.notes == (f"refused: {PROBE_REFUSED} (the block handled the refusal)",)
    assert_run_goes_on(sandbox, tmp_path, server)


def test_a_socket_probe_whose_refusal_escapes_is_a_violation(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    unhandled = HEADER + "import socket\nsocket.socket(socket.AF_INET6)\n" + TRIVIAL
    result = run(sandbox, tmp_path, unhandled, "ipv6_unhandled")
    assert (result.category, result.failed_stage) == ("sandbox-violation", "import")
    assert result.message.startswith(f"refused: {PROBE_REFUSED}; the block failed on it: ")
    assert "PermissionError: [Errno 1]" in result.message
    assert result.notes == ()


def test_a_failure_raised_from_the_refusal_is_a_violation(sandbox: Sandbox, tmp_path: Path) -> None:
    wrapped = forward_block(
        "import socket\ntry:\n    socket.socket()\n"
        "except OSError as error:\n    raise RuntimeError('needs the network') from error"
    )
    result = run(sandbox, tmp_path, wrapped, "ipv4_wrapped")
    assert (result.category, result.failed_stage) == ("sandbox-violation", "forward")
    assert "socket.__new__ (family AF_INET;" in result.message
    assert "needs the network" in result.message


def test_a_probe_then_an_unrelated_failure_keeps_its_category(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    failing = "raise ValueError('an unrelated problem')"
    code = HEADER + IPV6_PROBE + TRIVIAL.replace("return self.lin(x)", failing)
    result = run(sandbox, tmp_path, code, "ipv6_then_failure")
    assert (result.category, result.failed_stage) == ("input-shape", "forward"), result.message
    assert result.notes == (f"refused: {PROBE_REFUSED} (the block handled the refusal)",)


# A library that lists the system's fonts with a program when it has no cache, as matplotlib's
# font manager does at import (the child's home is empty, so no cache is found).
FONT_LIBRARY = """
import subprocess

try:
    FONTS = subprocess.check_output(["fc-list"]).splitlines()
except OSError:
    FONTS = []


def list_fonts():
    return subprocess.check_output(["fc-list"])
"""


def importing_library(folder: Path, then: str = "") -> str:
    (folder / "fontlib.py").write_text(FONT_LIBRARY)
    found = f"sys.path.insert(0, {str(folder)!r})\nfontlib = __import__(FONTLIB)\n"
    named = 'FONTLIB = "fontlib"  # not installed: found on a path\n'
    return HEADER + named + found + then + TRIVIAL


def test_a_library_starting_a_process_as_it_is_imported_is_a_probe(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    server = sandbox.pid
    (tmp_path / "site").mkdir()
    result = run(sandbox, tmp_path, importing_library(tmp_path / "site"), "font_probe")
    assert result.passed, result.message
    refused = "subprocess.Popen by fontlib line 5 while it is imported"
    assert result.notes == (f"refused: {refused} (the block handled the refusal)",)
    assert_run_goes_on(sandbox, tmp_path, server)


def test_a_library_the_block_has_start_a_process_is_a_violation(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The same library function called by the block's own code: the block's doing."""
    (tmp_path / "site").mkdir()
    calls = "try:\n    fontlib.list_fonts()\nexcept OSError:\n    pass\n"
    result = run(sandbox, tmp_path, importing_library(tmp_path / "site", calls), "font_call")
    assert result.category == "sandbox-violation", result.message
    assert result.message == "refused: subprocess.Popen"


def test_a_caught_network_attempt_stays_a_violation(sandbox: Sandbox, tmp_path: Path) -> None:
    """A lookup or a connect is an attempt to reach the network, not a probe."""
    code = forward_block(
        "import socket\nfor attempt in (lambda: socket.getaddrinfo('example.com', 80),\n"
        "                lambda: socket.socket(socket.AF_UNIX).connect('/run/x.sock')):\n"
        "    try:\n        attempt()\n    except OSError:\n        pass"
    )
    result = run(sandbox, tmp_path, code, "caught_network")
    assert result.category == "sandbox-violation", result.message
    assert result.message == "refused: socket.getaddrinfo; socket.connect"


def test_a_retry_loop_after_a_violation_ends_at_its_first_sleep(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A lookup retried with a back-off (as a model hub client does offline) would wait for
    ever: the violation decided the verdict, so the block ends when it first sleeps on it."""
    code = forward_block(
        "import socket\nwhile True:\n    try:\n        socket.getaddrinfo('example.com', 443)\n"
        "        break\n    except OSError:\n        time.sleep(1.0)"
    )
    result = run(sandbox, tmp_path, code, "retry_after_violation")
    assert (result.category, result.failed_stage) == ("sandbox-violation", "forward")
    assert result.message.startswith("refused: socket.getaddrinfo"), result.message


def test_the_search_ends_at_the_first_violation(sandbox: Sandbox, tmp_path: Path) -> None:
    """No other constructor call can undo a violation: the search does not try one."""
    code = HEADER + textwrap.dedent(
        """
        import socket


        class Block(nn.Module):
            def __init__(self, width: int = 4, depth: int = 2):
                super().__init__()
                socket.getaddrinfo("example.com", 443)
                self.lin = nn.Linear(width, width)

            def forward(self, x):
                return self.lin(x)
        """
    )
    result = run(sandbox, tmp_path, code, "violating_constructor")
    assert (result.category, result.failed_stage) == ("sandbox-violation", "instantiate")
    assert result.recipe is not None
    assert result.recipe.attempts == 1
