"""Executors without a sandbox: scheduling, the driver's share of a run, and option errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from nnrag.cli import main
from nnrag.config import load_settings
from nnrag.errors import ExecutorError
from nnrag.model import BlockJob, JobOutcome, ValidationResult
from nnrag.validate.executors import LocalExecutor, make_executor, schedule, validate_many
from nnrag.workspace import Workspace

SOURCE = '''\
"""Two closed blocks of different sizes and one that is not closed."""
from torch import nn


class Small(nn.Module):
    def forward(self, x):
        return x


class Large(nn.Module):
    """A longer block: its file is the largest."""

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.first = nn.Linear(dim, dim)
        self.second = nn.Linear(dim, dim)
        self.third = nn.Linear(dim, dim)

    def forward(self, x):
        return self.third(self.second(self.first(x)))


class Open(nn.Module):
    helper = missing_helper  # bound nowhere, read as the class body runs: not closed

    def forward(self, x):
        return self.helper(x)
'''


def job(block_id: str, size: int) -> BlockJob:
    return BlockJob(
        block_id=block_id,
        source="s",
        class_name=block_id.rsplit(":", 1)[1],
        depth="forward",
        timeout_s=1.0,
        file=f"/nowhere/{block_id}.py",
        sha256="0" * 64,
        size=size,
        key=("d", "forward", "v", "t"),
    )


def test_schedule_is_largest_first_then_by_id() -> None:
    jobs = [job("s:m:A", 10), job("s:m:C", 300), job("s:m:B", 300), job("s:m:D", 50)]
    assert [j.block_id for j in schedule(jobs)] == ["s:m:B", "s:m:C", "s:m:D", "s:m:A"]


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    package = tmp_path / "tree" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "blocks.py").write_text(SOURCE)
    (tmp_path / "repos.json").write_text(json.dumps({"sources": [{"name": "src", "path": "tree"}]}))
    settings = load_settings(
        tmp_path / "repos.json", cache_dir=tmp_path / "cache", environ={}, depth="closed"
    )
    space = Workspace(settings)
    yield space
    space.close()


class Recording:
    """Runs jobs with the local executor and remembers what was dispatched, in order."""

    name = "recording"

    def __init__(self, inner: LocalExecutor) -> None:
        self.inner = inner
        self.sent: list[BlockJob] = []

    def run(self, jobs: Sequence[BlockJob]) -> Iterator[tuple[BlockJob, JobOutcome]]:
        for job, outcome in self.inner.run(jobs):  # one at a time: run in the order sent
            self.sent.append(job)
            yield job, outcome

    def close(self) -> None:
        self.inner.close()


def test_validate_many_decides_closure_on_the_driver_and_sends_largest_first(
    workspace: Workspace,
) -> None:
    executor = Recording(LocalExecutor(workspace.sandbox()))
    results = list(validate_many(workspace, workspace.blocks(), executor=executor))
    names = [r.block_id.rsplit(":", 1)[1] for r in results]
    # the unclosed block never reaches the executor; the others go largest first
    assert names == ["Open", "Large", "Small"]
    assert [j.class_name for j in executor.sent] == ["Large", "Small"]
    assert results[0].category == "unresolved-name"
    assert [r.passed for r in results[1:]] == [True, True]
    for sent in executor.sent:  # what a worker needs: the file's bytes and their address
        data = Path(sent.file).read_bytes()
        assert sent.size == len(data)
        assert len(sent.sha256) == 64
        assert sent.source_packages == frozenset({"pkg"})


def test_second_run_is_served_from_the_result_cache(workspace: Workspace) -> None:
    local = LocalExecutor(workspace.sandbox())  # depth closed: the sandbox never starts
    first = list(validate_many(workspace, workspace.blocks(), executor=local))
    executor = Recording(LocalExecutor(workspace.sandbox()))
    again = list(validate_many(workspace, workspace.blocks(), executor=executor))
    assert executor.sent == []
    assert all(isinstance(r, ValidationResult) and r.cached for r in again)
    assert sorted((r.block_id, r.passed) for r in again) == sorted(
        (r.block_id, r.passed) for r in first
    )


def test_ray_executor_without_ray_says_what_to_install(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    monkeypatch.delitem(sys.modules, "nnrag.validate.ray_executor", raising=False)
    with pytest.raises(ExecutorError, match=r"pip install 'nnrag\[ray\]'"):
        make_executor("ray", workspace)


def test_ray_options_need_the_ray_executor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["validate", "--all", "--cache", str(tmp_path), "--ray-address", "h:6379"])
    assert code == 2
    assert "--ray-address and --ray-cpus-per-actor need --executor ray" in capsys.readouterr().err
