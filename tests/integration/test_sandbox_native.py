"""Fault suite, native-code tier: hostile blocks that go around Python (ctypes, libc, SQLite,
``_posixsubprocess``, /proc) leave the machine, the server and the result cache as they were."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_sandbox import HEADER, SECRET, TRIVIAL, descendants, settled_descendants

from nnrag.model import ValidationResult
from nnrag.validate.results import ResultCache, cache_key
from nnrag.validate.sandbox import Sandbox, describe_layers
from nnrag.validate.stages import validate_file

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform != "linux", reason="the kernel layers are Linux only"),
]

HOSTILE = Path(__file__).parent / "hostile"
DISK_MB = 64
FAILING = HEADER + TRIVIAL.replace("return self.lin(x)", "raise RuntimeError('always fails')")

# file -> (category, words the message must contain); None: harmless, the block passes.
CASES: dict[str, tuple[str | None, str]] = {
    "libc_unlink": ("sandbox-violation", "system call unlink on /tmp/"),
    "chdir_relative": ("sandbox-violation", "os.remove on keep.txt"),
    "dir_fd_remove": ("sandbox-violation", "os.remove on keep.txt"),
    "sqlite_cache": ("sandbox-violation", "sqlite3.connect"),
    "libc_system": ("sandbox-violation", "system call execve"),
    "posixsubprocess": ("sandbox-violation", "system call execve"),
    "double_fork_kill": ("sandbox-violation", "system call kill of pid 1 (the sandbox server)"),
    "proc_forge": ("sandbox-violation", "system call openat on /proc/1/fd/0 (another process)"),
    "kill_server": ("sandbox-violation", "system call kill of pid 1 (the sandbox server)"),
    "tgkill_server": ("sandbox-violation", "system call tgkill of pid 1 (the sandbox server)"),
    "proc_fd_read": ("sandbox-violation", "system call openat on /proc/1/fd (another process)"),
    "symlink_out": ("sandbox-violation", "escape -> @CANARY@/keep.txt (a symbolic link)"),
    "setns_net": ("sandbox-violation", "system call setns"),
    "native_socket": (
        "sandbox-violation",
        "system call socket (family AF_INET; only unix sockets are allowed); "
        "system call connect to 127.0.0.1:9 (a network address)",
    ),
    "ptrace_server": ("sandbox-violation", "system call ptrace"),
    "fill_disk": ("runtime-error", "before the folder was full"),
    "fork_bomb": ("sandbox-violation", "more than 128 processes or threads"),
}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    os.environ[SECRET] = "hunter2"
    try:
        with Sandbox(memory_mb=512, disk_mb=DISK_MB) as box:
            box.start()
            if not all(box.layers.values()):
                pytest.skip(
                    f"this kernel does not give every layer ({describe_layers(box.layers)})"
                )
            yield box
    finally:
        del os.environ[SECRET]


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """Canary folders outside the block's folder (one in $HOME) and a result cache."""
    canary = tmp_path / "canary"
    home = Path.home() / f"nnrag-canary-{uuid.uuid4().hex[:8]}"
    for folder in (canary, home):
        folder.mkdir()
        (folder / "keep.txt").write_text("canary")
    cache_path = tmp_path / "cache" / "results.sqlite"
    cache = ResultCache(cache_path)
    failing = ValidationResult(
        block_id="t:failing:Block",
        depth="forward",
        stage_reached="instantiate",
        failed_stage="forward",
        category="runtime-error",
        message="always fails",
    )
    cache.put(cache_key("0" * 40, "forward"), failing)
    cache.close()
    try:
        yield {"canary": canary, "home": home, "cache": cache_path}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def snapshot(paths: dict[str, Path]) -> dict[str, object]:
    """What a block must not change: every file below the canaries, the cache's bytes."""
    found: dict[str, object] = {}
    for name in ("canary", "home"):
        found[name] = sorted(
            (str(p.relative_to(paths[name])), p.read_bytes()) for p in paths[name].rglob("*")
        )
    for path in sorted(paths["cache"].parent.iterdir()):
        found[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


SLOW = {"fork_bomb": 300.0}
"""Timeouts of cases whose work grows with the machine's load (128 forks of a torch process)."""


def run_file(
    sandbox: Sandbox, tmp_path: Path, code: str, name: str, timeout_s: float = 20.0
) -> ValidationResult:
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    return validate_file(
        path, block_id=f"t:{name}:Block", class_name="Block", timeout_s=timeout_s, sandbox=sandbox
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_native_attack_leaves_no_trace(
    sandbox: Sandbox, tmp_path: Path, machine: dict[str, Path], case: str
) -> None:
    category, words = CASES[case]
    code = (HOSTILE / f"{case}.py").read_text()
    for marker, key in (("@CANARY@", "canary"), ("@CACHE@", "cache"), ("@HOME@", "home")):
        code = code.replace(marker, str(machine[key]))
    server, forks = sandbox.pid, sandbox.server_pid
    before = snapshot(machine)
    result = run_file(sandbox, tmp_path, code, case, SLOW.get(case, 20.0))
    assert result.category == category, result.message
    assert words.replace("@CANARY@", str(machine["canary"])) in result.message
    assert "hunter2" not in result.message
    assert snapshot(machine) == before, "the block changed something outside its folder"
    assert sandbox.pid == server, "the server must survive"
    assert sandbox.server_pid == forks
    assert forks is not None
    assert server is not None
    assert settled_descendants(forks) == [], "a process outlived its block"
    assert descendants(server) in ([], [forks])
    failing = run_file(sandbox, tmp_path, FAILING, "failing")  # no verdict was forged
    assert (failing.category, failing.failed_stage) == ("runtime-error", "forward")
    after = run_file(sandbox, tmp_path, HEADER + TRIVIAL, "trivial")
    assert after.passed, after.message


def test_a_block_writes_and_reads_its_own_temporary_files(sandbox: Sandbox, tmp_path: Path) -> None:
    code = HEADER + TRIVIAL.replace(
        "return self.lin(x)",
        "import tempfile\n"
        "        with tempfile.NamedTemporaryFile('w+', delete=False) as handle:\n"
        "            handle.write('x' * 1000)\n"
        "        assert open(handle.name).read() == 'x' * 1000\n"
        "        assert open(os.path.expanduser('~/own.txt'), 'w').write('y') == 1\n"
        "        assert open(__file__).read()\n"
        "        return self.lin(x)",
    )
    result = run_file(sandbox, tmp_path, code, "temp_files")
    assert result.passed, result.message


OWN_PROCESSES = HEADER + TRIVIAL.replace(
    "return self.lin(x)",
    "import ctypes, signal\n"
    "        libc = ctypes.CDLL(None, use_errno=True)\n"
    "        child = libc.fork()\n"
    "        if child == 0:\n"
    "            time.sleep(30)\n"
    "            libc._exit(0)\n"
    "        assert libc.kill(child, signal.SIGTERM) == 0, ctypes.get_errno()\n"
    "        assert os.waitpid(child, 0)[0] == child\n"
    "        assert libc.kill(os.getpid(), 0) == 0\n"
    "        assert open('/proc/1/cgroup').read() is not None\n"
    "        assert open(f'/proc/{os.getpid()}/environ', 'rb').read() is not None\n"
    "        os.symlink(os.path.join(os.getcwd(), 'own.txt'), 'link')\n"
    "        fd = libc.open(b'link', os.O_WRONLY | os.O_CREAT, 0o600)\n"
    "        assert fd >= 0 and libc.write(fd, b'ok', 2) == 2, ctypes.get_errno()\n"
    "        libc.close(fd)\n"
    "        assert open('own.txt').read() == 'ok'\n"
    "        return self.lin(x)",
)


def test_a_block_signals_its_own_processes_and_reads_public_proc(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Signals to its own processes, signal 0 (does it exist?), /proc entries the kernel
    shows everyone and a link inside its folder are not refused."""
    result = run_file(sandbox, tmp_path, OWN_PROCESSES, "own_processes")
    assert result.passed, result.message


def test_layers_are_named_once(sandbox: Sandbox) -> None:
    assert describe_layers(sandbox.layers) == "sandbox: namespaces yes, seccomp yes, landlock yes"


def test_strict_refuses_a_system_without_every_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    from nnrag.errors import SandboxError

    with Sandbox(strict=True) as box:
        box.start()
        assert all(box.layers.values())
    info = {"ready": True, "layers": {"namespaces": True, "seccomp": True, "landlock": False}}
    with Sandbox(strict=True) as box:
        monkeypatch.setattr(box, "_receive", lambda timeout_s: info)
        monkeypatch.setattr("subprocess.Popen", _NoProcess)
        with pytest.raises(SandboxError, match="landlock"):
            box.start()


class _NoProcess:
    """Stands in for the server process in the strict-mode test (nothing is started)."""

    pid = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def poll(self) -> int:
        return 0

    def wait(self, timeout: float | None = None) -> int:
        return 0


NATIVE_PROBE = HEADER + TRIVIAL.replace(
    "return self.lin(x)",
    "import ctypes, socket\n"
    "        libc = ctypes.CDLL(None, use_errno=True)\n"
    "        fd = libc.socket(socket.AF_INET6, socket.SOCK_DGRAM, 0)\n"
    "        if fd < 0:\n"
    "            @ESCAPE@\n"
    "        return self.lin(x)",
)
NATIVE_REFUSED = "system call socket (family AF_INET6; only unix sockets are allowed)"


def test_a_handled_native_socket_probe_passes_with_a_note(
    sandbox: Sandbox, tmp_path: Path, machine: dict[str, Path]
) -> None:
    server, before = sandbox.pid, snapshot(machine)
    code = NATIVE_PROBE.replace("@ESCAPE@", "assert ctypes.get_errno() == 1  # EPERM")
    result = run_file(sandbox, tmp_path, code, "native_probe")
    assert result.passed, result.message
    assert result.notes == (f"refused: {NATIVE_REFUSED} (the block handled the refusal)",)
    assert snapshot(machine) == before
    assert sandbox.pid == server
    assert sandbox.server_pid is not None
    assert settled_descendants(sandbox.server_pid) == []


def test_a_native_socket_probe_whose_refusal_escapes_is_a_violation(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    escape = "raise OSError(ctypes.get_errno(), 'no IPv6 socket')"
    result = run_file(sandbox, tmp_path, NATIVE_PROBE.replace("@ESCAPE@", escape), "native_out")
    assert (result.category, result.failed_stage) == ("sandbox-violation", "forward")
    assert result.message.startswith(f"refused: {NATIVE_REFUSED}; the block failed on it: ")
    assert "no IPv6 socket" in result.message


UNIX_SOCKETS = HEADER + TRIVIAL.replace(
    "return self.lin(x)",
    "import ctypes, socket, struct\n"
    "        libc = ctypes.CDLL(None, use_errno=True)\n"
    "        def address(path):\n"
    "            return struct.pack('=H', socket.AF_UNIX) + path.encode() + b'\\0'\n"
    "        own = libc.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0)\n"
    "        here = address(os.path.join(os.getcwd(), 'own.sock'))\n"
    "        assert libc.bind(own, here, len(here)) == 0, ctypes.get_errno()\n"
    "        assert libc.listen(own, 1) == 0, ctypes.get_errno()\n"
    "        mine = libc.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0)\n"
    "        assert libc.connect(mine, here, len(here)) == 0, ctypes.get_errno()\n"
    "        there = libc.socket(socket.AF_UNIX, socket.SOCK_STREAM, 0)\n"
    "        outside = address('@LISTENER@')\n"
    "        if libc.connect(there, outside, len(outside)) == 0:\n"
    "            libc.write(there, b'hello', 5)\n"
    "        return self.lin(x)",
)


def test_a_unix_socket_outside_the_folder_is_refused_and_noted(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """As root a connect needs no write access the mounts could take away (docker.sock)."""
    import socket

    path = tmp_path / "listener.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen(1)
        listener.settimeout(0.5)
        code = UNIX_SOCKETS.replace("@LISTENER@", str(path))
        result = run_file(sandbox, tmp_path, code, "unix_sockets")
        with pytest.raises(TimeoutError):
            listener.accept()
    assert result.passed, result.message
    assert result.notes == (
        f"refused: system call connect to unix socket {path} (outside the block's folder) "
        "(the block handled the refusal)",
    )
