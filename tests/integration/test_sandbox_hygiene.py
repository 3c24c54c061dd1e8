"""No process outlives nnrag: ``kill -9`` of ``nnrag index`` or of a sandbox's client ends all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_sandbox import descendants

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform != "linux", reason="parent-death signals are Linux only"),
]


def alive(pids: list[int]) -> list[int]:
    """The processes of ``pids`` still running (zombies count as gone)."""
    found = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if state[state.rfind(")") + 2] != "Z":
            found.append(pid)
    return found


def wait_for(predicate: object, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]  # predicate is object-typed in the table; each entry is callable
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting")


def gone_soon(pids: list[int]) -> list[int]:
    for _ in range(200):
        if not alive(pids):
            return []
        time.sleep(0.05)
    return alive(pids)


def test_kill_of_nnrag_index_ends_its_pool_workers(tmp_path: Path) -> None:
    source = tmp_path / "src" / "pkg"
    source.mkdir(parents=True)
    (source / "__init__.py").write_text("")
    body = "\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(400))
    for index in range(400):  # enough for the process pool, slow enough to be caught in it
        (source / f"m{index}.py").write_text(body)
    repos = tmp_path / "repos.json"
    repos.write_text(json.dumps({"sources": [{"name": "src", "path": "src"}]}))
    command = [sys.executable, "-m", "nnrag", "index", "--repos", str(repos)]
    command += ["--cache", str(tmp_path / "cache")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: len(descendants(proc.pid)) >= 2 or proc.poll() is not None)
        workers = descendants(proc.pid)
        assert proc.poll() is None, "indexing ended before the pool could be caught running"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert gone_soon(workers) == [], "pool workers outlived nnrag index"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_kill_of_the_client_ends_server_and_block(tmp_path: Path) -> None:
    block = tmp_path / "block.py"
    block.write_text(
        textwrap.dedent(
            """
            import time
            from torch import nn

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(4, 4)

                def forward(self, x):
                    time.sleep(1000)
            """
        )
    )
    started = tmp_path / "started"
    client = textwrap.dedent(
        f"""
        from pathlib import Path
        from nnrag.validate.sandbox import BlockRequest, Sandbox

        box = Sandbox(memory_mb=512)
        box.start()
        Path({str(started)!r}).write_text("")
        box.run(BlockRequest(path={str(block)!r}, class_name="Block", timeout_s=600.0))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", client], env=env)
    try:
        wait_for(started.exists, timeout_s=300.0)
        wait_for(lambda: len(descendants(proc.pid)) >= 3)  # launcher, server, block
        time.sleep(0.5)
        family = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert gone_soon(family) == [], "sandbox processes outlived their client"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
