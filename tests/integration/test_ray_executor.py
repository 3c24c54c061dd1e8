"""The Ray executor on a local Ray instance: same outcomes and cache as a local run, no lost
block when an actor dies, a ``crash`` when a block's worker dies for good, nothing left over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from filelock import FileLock

from nnrag.cli import main
from nnrag.config import load_settings
from nnrag.errors import ExecutorError
from nnrag.model import BlockJob, JobOutcome, RayOptions, ValidationResult
from nnrag.validate.executors import LocalExecutor, validate_many
from nnrag.workspace import Workspace

ray = pytest.importorskip("ray")

from nnrag.validate.ray_executor import RayExecutor, connect  # noqa: E402  (needs ray)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOY = textwrap.dedent(
    '''
    """A small source: blocks that pass, fail at each sandbox stage, or fail the closure."""
    import time

    import torch
    from torch import nn

    PAUSE = 3.0


    def double(x):
        return x * 2


    class Passing(nn.Module):
        def __init__(self, dim: int = 8):
            super().__init__()
            self.lin = nn.Linear(dim, dim)

        def forward(self, x):
            return double(self.lin(x))


    class Slow(nn.Module):
        """Sleeps in forward, so that a test can kill its actor while it runs."""

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            time.sleep(PAUSE)
            return self.lin(x)


    class BadCtor(nn.Module):
        def __init__(self, dim: int = 4):
            super().__init__()
            raise ValueError("never constructs")

        def forward(self, x):
            return x


    class BadForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            raise RuntimeError("boom")


    class Unclosed(nn.Module):
        helper = not_defined_anywhere  # read as the class body runs: not closed

        def forward(self, x):
            return self.helper(x)
    '''
)


def workspace(tmp_path: Path, name: str) -> Workspace:
    """A workspace over the toy source with its own cache folder ``name``."""
    root = tmp_path / "toy-src"
    if not root.exists():
        (root / "toy").mkdir(parents=True)
        (root / "toy" / "__init__.py").write_text("")
        (root / "toy" / "blocks.py").write_text(TOY)
        (tmp_path / "repos.json").write_text(
            json.dumps({"sources": [{"name": "toy", "path": str(root), "paths": ["toy"]}]})
        )
    settings = load_settings(
        tmp_path / "repos.json", cache_dir=tmp_path / name, environ={}, timeout_s=60.0
    )
    return Workspace(settings)


def outcome(result: ValidationResult) -> tuple[object, ...]:
    return (result.stage_reached, result.failed_stage, result.category, result.passed)


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A local Ray instance with two CPUs for this module; shut down (processes gone) after.

    xdist may split this module over workers: they take turns (a lock in the base temp
    folder they share), as two Ray instances starting at once on two cores can time out.
    """
    shared = tmp_path_factory.getbasetemp().parent
    with FileLock(shared / "nnrag-ray-tests.lock", timeout=1800):
        for attempt in range(3):  # Ray gives its raylet 30 s to start: a loaded machine
            try:
                assert connect(RayOptions(local_cpus=2))  # ray.init(num_cpus=2) + py_modules
                break
            except ExecutorError:
                if attempt == 2:
                    raise
        try:
            yield
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def local_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ValidationResult]:
    """The toy source validated by the local executor: the reference outcomes."""
    tmp_path = tmp_path_factory.mktemp("local")
    local = workspace(tmp_path, "cache")
    try:
        executor = LocalExecutor(local.sandbox())
        return {r.block_id: r for r in validate_many(local, local.blocks(), executor=executor)}
    finally:
        local.close()


def test_local_reference_outcomes(local_results: dict[str, ValidationResult]) -> None:
    """The toy source covers a pass and failures at instantiate, forward and closed."""
    got = {block_id.rsplit(":", 1)[1]: outcome(r) for block_id, r in local_results.items()}
    assert got == {
        "Passing": ("forward", None, None, True),
        "Slow": ("forward", None, None, True),
        "BadCtor": ("import", "instantiate", "ctor-args", False),
        "BadForward": ("instantiate", "forward", "runtime-error", False),
        "Unclosed": ("compile", "closed", "unresolved-name", False),
    }


def test_same_outcomes_and_cache_as_local(
    local_ray: None, tmp_path: Path, local_results: dict[str, ValidationResult]
) -> None:
    remote = workspace(tmp_path, "cache-ray")
    executor = RayExecutor(RayOptions())
    try:
        results = list(validate_many(remote, remote.blocks(), executor=executor))
        workers = list(executor.workers)
    finally:
        executor.close()
    assert len(workers) == 2  # one actor per CPU
    assert all(w["sandbox_pid"] and w["pid"] != os.getpid() for w in workers)
    # nnrag is shipped to the workers as a package in Ray's object store (a local cluster's
    # workers may still import this checkout first: they share its file system)
    assert all(len(w["py_modules"]) == 1 for w in workers)
    assert all(w["py_modules"][0].startswith("gcs://_ray_pkg_") for w in workers)
    by_id = {r.block_id: r for r in results}
    assert sorted(by_id) == sorted(local_results)
    assert {b: outcome(r) for b, r in by_id.items()} == {
        b: outcome(r) for b, r in local_results.items()
    }
    for block_id, result in by_id.items():
        # the same file name in the driver's cache, and messages that name it, not a worker path
        assert result.file is not None
        assert result.file.startswith(str(tmp_path / "cache-ray"))
        assert "nnrag-ray-" not in result.message, block_id
        assert not result.cached
    # every verdict is in the result cache: a second run sends nothing to any executor
    recorder = _Recording()
    again = list(validate_many(remote, remote.blocks(), executor=recorder))
    assert recorder.sent == []
    assert all(r.cached for r in again)
    assert {r.block_id: outcome(r) for r in again} == {b: outcome(r) for b, r in by_id.items()}
    remote.close()


class _Recording:
    """An executor that records the jobs it is given and runs none."""

    name = "recording"

    def __init__(self) -> None:
        self.sent: list[str] = []

    def run(self, jobs: Sequence[BlockJob]) -> Iterator[tuple[BlockJob, JobOutcome]]:
        self.sent += [job.block_id for job in jobs]
        return iter(())

    def close(self) -> None:
        pass


def kill_while_running(
    executor: RayExecutor, block_name: str, kills: list[int]
) -> threading.Thread:
    """Kill the actor running ``block_name`` once, inside its slow forward; append its pid."""

    def killer() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            running = [s for b, s in executor.in_flight.items() if b.endswith(f":{block_name}")]
            if running:
                time.sleep(1.0)  # import and instantiate are done; forward sleeps 3 s
                kills.append(running[0].info["pid"])
                ray.kill(running[0].actor, no_restart=False)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    return thread


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def test_killed_actor_loses_no_block(
    local_ray: None, tmp_path: Path, local_results: dict[str, ValidationResult]
) -> None:
    remote = workspace(tmp_path, "cache-ray")
    executor = RayExecutor(RayOptions(actors=1))  # one torch start-up, not two
    kills: list[int] = []
    try:
        killer = kill_while_running(executor, "Slow", kills)
        results = list(validate_many(remote, remote.blocks(), executor=executor))
        killer.join(timeout=10)
        pids = [ray.get(slot.actor.ready.remote())["pid"] for slot in executor.slots]
        workers = list(executor.workers)
    finally:
        executor.close()
        remote.close()
    assert len(kills) == 1, "the test did not catch Slow running"
    assert kills[0] not in pids  # Ray restarted the killed actor: a new process
    assert executor.replaced == 0  # and retried the block on it
    assert {r.block_id: outcome(r) for r in results} == {
        b: outcome(r) for b, r in local_results.items()
    }
    # the actors' sandbox servers went with them
    deadline = time.monotonic() + 20
    servers = [w["sandbox_pid"] for w in workers]
    while not all(gone(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(gone(pid) for pid in servers)


def test_block_whose_worker_dies_is_a_crash(
    local_ray: None, tmp_path: Path, local_results: dict[str, ValidationResult]
) -> None:
    """Without retries, the block whose actor dies is a ``crash``; the run goes on."""
    remote = workspace(tmp_path, "cache-ray")
    executor = RayExecutor(RayOptions(actors=1, max_task_retries=0))
    kills: list[int] = []
    try:
        killer = kill_while_running(executor, "Slow", kills)
        results = {r.block_id: r for r in validate_many(remote, remote.blocks(), executor=executor)}
        killer.join(timeout=10)
    finally:
        executor.close()
    assert len(kills) == 1
    assert executor.replaced == 1
    slow = results.pop("toy:toy.blocks:Slow")
    assert (slow.category, slow.failed_stage, slow.passed) == ("crash", "import", False)
    assert "the Ray worker validating this block died 1 time(s)" in slow.message
    expected = {b: outcome(r) for b, r in local_results.items() if not b.endswith(":Slow")}
    assert {b: outcome(r) for b, r in results.items()} == expected
    # the crash is not cached (the run, not the block, may be at fault): a re-run retries it
    recorder = _Recording()
    again = list(validate_many(remote, remote.blocks(), executor=recorder))
    remote.close()
    assert recorder.sent == ["toy:toy.blocks:Slow"]
    assert all(r.cached for r in again)
    assert len(again) == len(local_results) - 1


def test_cli_validate_all_on_ray_writes_the_same_report(
    local_ray: None,
    tmp_path: Path,
    local_results: dict[str, ValidationResult],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``nnrag validate --all --executor ray``: JSON rows in block order and the run report."""
    workspace(tmp_path, "cache").close()  # writes the toy source and repos.json
    report = tmp_path / "report.json"
    args = ["validate", "--all", "--repos", str(tmp_path / "repos.json")]
    args += ["--cache", str(tmp_path / "cache"), "--json", "--report", str(report)]
    args += ["--executor", "ray", "--ray-cpus-per-actor", "2"]  # one actor holds both CPUs
    assert main(args) == 1  # some toy blocks fail
    rows = json.loads(capsys.readouterr().out)
    assert [row["block_id"] for row in rows] == sorted(local_results)  # block order
    assert {row["block_id"]: row["category"] for row in rows} == {
        b: r.category for b, r in local_results.items()
    }
    entries = {e["id"]: e for e in json.loads(report.read_text())["blocks"]}
    assert {b: e["outcome"] for b, e in entries.items()} == {
        b: "passed" if r.passed else "failed" for b, r in local_results.items()
    }
    assert ray.is_initialized()  # the CLI joined this process's Ray and left it running


def test_nothing_imports_ray_unless_asked() -> None:
    code = "import sys, nnrag.cli, nnrag.validate.executors, nnrag.workspace; print(sorted("
    code += "m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
