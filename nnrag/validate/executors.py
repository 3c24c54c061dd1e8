"""Executors: where the sandbox stages of prepared block jobs run (here, or on a Ray cluster)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from nnrag.model import BlockJob, JobOutcome, RayOptions, ValidationResult
from nnrag.validate.stages import finish_job, prepare_block, run_job

if TYPE_CHECKING:
    from nnrag.model import BlockRef, Stage
    from nnrag.validate.sandbox import Sandbox
    from nnrag.validate.stages import BlockSource

ExecutorName = Literal["local", "ray"]
EXECUTORS: tuple[ExecutorName, ...] = ("local", "ray")


class Executor(Protocol):
    """Runs block jobs and yields each with its outcome as soon as it is known.

    Jobs go out as prepared: their harvested recipes are fixed (and part of their result key)
    when :func:`~nnrag.validate.stages.prepare_block` makes them, so a verdict never depends
    on the order in which an executor runs them.
    """

    name: str

    def run(self, jobs: Sequence[BlockJob]) -> Iterator[tuple[BlockJob, JobOutcome]]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """One warm sandbox of this process; jobs run one after another, in the given order."""

    name = "local"

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def run(self, jobs: Sequence[BlockJob]) -> Iterator[tuple[BlockJob, JobOutcome]]:
        for job in jobs:
            yield job, run_job(job, sandbox=self.sandbox)

    def close(self) -> None:
        """Nothing to do: the sandbox belongs to the workspace, which closes it."""


def schedule(jobs: Iterable[BlockJob]) -> list[BlockJob]:
    """Largest block file first (ties by id): the long runs start early, so the last ones to
    finish are short, and composite blocks harvest recipes for their parts before them."""
    return sorted(jobs, key=lambda job: (-job.size, job.block_id))


def validate_many(
    workspace: BlockSource,
    blocks: Iterable[BlockRef],
    *,
    executor: Executor,
    depth: Stage | None = None,
    final_harvest: Collection[str] = frozenset(),
) -> Iterator[ValidationResult]:
    """Validate ``blocks`` through ``executor``; yield each result as soon as it is known.

    The driver (this process) does everything but the sandbox stages: the result cache,
    extraction and the block files (:func:`~nnrag.validate.stages.prepare_block`), and the
    cache writes of every outcome (:func:`~nnrag.validate.stages.finish_job`). So a run
    through any executor leaves the same cache and gives the same results as a local run.
    Cached and closure-decided results come first, then the jobs in :func:`schedule` order
    as they finish. ``final_harvest``: ids of blocks whose harvest the harvest pass knows to be
    final (:func:`~nnrag.validate.stages.prepare_block`).
    """
    jobs: list[BlockJob] = []
    for block in blocks:
        final = block.id in final_harvest
        prepared = prepare_block(workspace, block, depth=depth, final_harvest=final)
        if isinstance(prepared, ValidationResult):
            yield prepared
        else:
            jobs.append(prepared)
    for job, outcome in executor.run(schedule(jobs)):
        yield finish_job(workspace, job, outcome)


def make_executor(
    name: ExecutorName, workspace: BlockSource, *, ray: RayOptions | None = None
) -> Executor:
    """The executor called ``name``; Ray is imported only here, and only for ``"ray"``."""
    if name == "local":
        return LocalExecutor(workspace.sandbox())
    from nnrag.errors import ExecutorError

    try:
        from nnrag.validate.ray_executor import RayExecutor
    except ImportError as error:
        if error.name is None or not error.name.startswith("ray"):
            raise
        raise ExecutorError(
            "the ray executor needs Ray, which is not installed here: "
            "pip install 'nnrag[ray]' (on the driver and on every node of the cluster)"
        ) from error
    return RayExecutor(ray or RayOptions())


__all__ = [
    "EXECUTORS",
    "Executor",
    "ExecutorName",
    "LocalExecutor",
    "make_executor",
    "schedule",
    "validate_many",
]
