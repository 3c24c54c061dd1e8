"""The Ray executor: actors holding a warm sandbox each, one block job per task.

Only :func:`nnrag.validate.executors.make_executor` imports this module (it imports Ray).
The driver keeps the index, the block files and the result cache; a worker receives a job
(plain data) and the block file's bytes through Ray's object store, checks them against
their content address, and runs the stages in the sandbox server its actor started as a
child process (a fresh interpreter, never a fork of the multi-threaded Ray worker).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayError, RayTaskError

import nnrag
from nnrag.errors import ExecutorError, SandboxError
from nnrag.model import BlockJob, JobOutcome, RayOptions, ValidationResult, stage_index
from nnrag.validate.results import torch_version
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import run_job

READY_TIMEOUT_S = 900.0
"""How long actors may take to start (a cluster may first have to add nodes)."""
REPLACE_TIMEOUT_S = 300.0
"""How long a replacement actor may take to find room before the run goes on without it."""


class SandboxWorker:
    """The body of one Ray actor: a warm sandbox server, a child process of the actor.

    Started in ``__init__``, so an actor that Ray restarts (``max_restarts``) is warm again
    before it takes the retried block.
    """

    def __init__(self, memory_mb: int) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="nnrag-ray-"))
        self._sandbox = Sandbox(memory_mb=memory_mb)
        self._error = ""
        try:
            self._sandbox.start()
        except SandboxError as error:
            self._error = str(error)

    def ready(self) -> dict[str, Any]:
        """Where this actor runs and what its sandbox has (``error``: why it did not start)."""
        return {
            "host": socket.gethostname(),
            "node": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "sandbox_pid": self._sandbox.pid,
            "torch": self._sandbox.info.get("torch"),
            "nnrag": str(Path(nnrag.__file__).parent),
            "py_modules": list(ray.get_runtime_context().runtime_env.get("py_modules") or ()),
            "error": self._error,
        }

    def validate(self, job: BlockJob, data: bytes) -> JobOutcome:
        """Run ``job`` on ``data``, the block file's bytes, written to a content-addressed path."""
        digest = hashlib.sha256(data).hexdigest()
        if digest != job.sha256:
            message = (
                f"the worker received bytes with sha256 {digest}, not the block file "
                f"{job.file} ({job.sha256}): the file changed after extraction; re-run"
            )
            return JobOutcome(result=_failure(job, "internal-error", message), cache=False)
        folder = self._folder / digest
        folder.mkdir(exist_ok=True)
        path = folder / Path(job.file).name
        path.write_bytes(data)
        try:
            outcome = run_job(job, sandbox=self._sandbox, path=path)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        result = outcome.result
        # Messages and reports name the block file as the driver knows it.
        relocated = replace(
            result, file=job.file, message=result.message.replace(str(path), job.file)
        )
        return replace(outcome, result=relocated)

    def close(self) -> None:
        """Stop the sandbox server and remove this actor's folder."""
        self._sandbox.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def _failure(job: BlockJob, category: Any, message: str) -> ValidationResult:
    """A failed result for a job that did not get a verdict from the sandbox."""
    sandboxed = stage_index(job.depth) > stage_index("closed")
    return ValidationResult(
        block_id=job.block_id,
        depth=job.depth,
        # the driver checked the closure before making the job; the sandbox stages are next
        stage_reached="closed" if sandboxed else None,
        failed_stage="import" if sandboxed else job.depth,
        category=category,
        message=message,
        file=job.file,
    )


@dataclass(slots=True)
class _Slot:
    """One actor of the pool and what the driver knows about it."""

    actor: Any  # a Ray ActorHandle: Ray's typing gives no useful type for remote classes
    ready: Any  # ObjectRef of its ready() call
    info: dict[str, Any] | None = None


class RayExecutor:
    """Runs block jobs on Ray actors; results stream back in the order they finish.

    Actors are created (and start their sandbox) as soon as the executor is: while the
    driver extracts, they warm up. Fault tolerance is Ray's: each actor has
    ``max_restarts=-1`` and ``max_task_retries`` (a block whose actor dies is re-run on the
    restarted actor); a block still without a verdict after its retries is a ``crash``
    result (not cached: the run, not the block, may be at fault), its actor is replaced,
    and the run goes on.
    """

    name = "ray"

    def __init__(self, options: RayOptions) -> None:
        self.options = options
        self._owns_ray = connect(options)
        cpus = float(ray.cluster_resources().get("CPU", 1.0))  # type: ignore[no-untyped-call]  # Ray leaves it unannotated
        count = options.actors or max(1, int(cpus // options.cpus_per_actor))
        self._actor_class = ray.remote(SandboxWorker).options(
            num_cpus=options.cpus_per_actor,
            max_restarts=-1,
            max_task_retries=options.max_task_retries,
            scheduling_strategy="SPREAD",
        )
        self.slots = [self._new_slot() for _ in range(count)]
        self.workers: list[dict[str, Any]] = []
        """``ready()`` of every actor that ran jobs, replacements included."""
        self.replaced = 0
        """Actors replaced after a block went without a verdict."""
        self.round_trips: dict[str, float] = {}
        """Block id -> seconds from sending its job to having its outcome on the driver."""
        self.in_flight: dict[str, _Slot] = {}
        """Block id -> the slot whose actor runs it now."""

    def _new_slot(self) -> _Slot:
        actor = self._actor_class.remote(self.options.memory_mb)
        return _Slot(actor=actor, ready=actor.ready.remote())  # type: ignore[attr-defined]  # Ray's actor-method typing

    def wait_ready(self) -> list[dict[str, Any]]:
        """Wait until every actor's sandbox runs; what each reported (see ``ready``)."""
        for slot in self.slots:
            self._wait_ready(slot)
        return [slot.info for slot in self.slots if slot.info is not None]

    def _wait_ready(self, slot: _Slot, timeout_s: float = READY_TIMEOUT_S) -> None:
        if slot.info is not None:
            return
        try:
            info: dict[str, Any] = ray.get(slot.ready, timeout=timeout_s)
        except GetTimeoutError as error:
            raise ExecutorError(
                f"a Ray actor did not start within {timeout_s:.0f} s: does the cluster "
                f"have {self.options.cpus_per_actor} free CPUs per actor?"
            ) from error
        except RayError as error:
            raise ExecutorError(f"a Ray actor could not start: {error}") from error
        if info["error"]:
            raise ExecutorError(
                f"the sandbox did not start on Ray node {info['host']}: {info['error']}"
            )
        if info["torch"] != torch_version():
            raise ExecutorError(
                f"Ray node {info['host']} runs torch {info['torch']}, this driver "
                f"{torch_version()}: results would be cached under the wrong torch version; "
                "install the same torch on the driver and on the cluster"
            )
        slot.info = info
        self.workers.append(info)

    def run(self, jobs: Sequence[BlockJob]) -> Iterator[tuple[BlockJob, JobOutcome]]:
        """Send jobs in order, one in flight per actor; yield each outcome as it arrives."""
        queue = list(reversed(jobs))  # pop() takes the next job in order
        if not queue:
            return
        self.wait_ready()
        objects: dict[str, Any] = {}  # content address -> ObjectRef of the file's bytes
        pending: dict[Any, tuple[BlockJob, _Slot, float]] = {}

        def send(slot: _Slot) -> Iterator[tuple[BlockJob, JobOutcome]]:
            while queue:
                job = queue.pop()
                if job.sha256 not in objects:
                    try:
                        data = Path(job.file).read_bytes()
                    except OSError as error:
                        message = f"{job.file}: cannot read the block file: {error}"
                        failure = _failure(job, "internal-error", message)
                        yield job, JobOutcome(result=failure, cache=False)
                        continue
                    objects[job.sha256] = ray.put(data)
                ref = slot.actor.validate.remote(job, objects[job.sha256])
                pending[ref] = (job, slot, time.perf_counter())
                self.in_flight[job.block_id] = slot
                return

        for slot in self.slots:
            yield from send(slot)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            now = time.perf_counter()
            stuck = [
                r
                for r, (j, _, t) in pending.items()
                if r not in done and now - t > self._patience(j)
            ]
            for ref in [*done, *stuck]:
                job, slot, sent = pending.pop(ref)
                self.in_flight.pop(job.block_id, None)
                outcome = self._outcome(job, ref) if ref in done else self._stuck(job, ref)
                self.round_trips[job.block_id] = time.perf_counter() - sent
                objects.pop(job.sha256, None)
                replacement: _Slot | None = slot
                if isinstance(outcome, _Lost):
                    replacement = self._replace(slot)
                    outcome = outcome.outcome
                yield job, outcome
                if replacement is not None:
                    yield from send(replacement)
            if queue and not pending:
                raise ExecutorError(
                    f"every Ray actor is gone and none could be restarted: {len(queue)} "
                    "blocks were not validated (the results so far are cached); check the "
                    "cluster's nodes and run again"
                )

    def _patience(self, job: BlockJob) -> float:
        """Seconds after which a job that has not come back is given up.

        A live actor answers within two sandbox attempts of ``timeout_s + 60`` s; each
        retry may first wait for the actor to restart. Past that the actor is not coming
        back (its node is gone and no other node has room): the block is a ``crash``.
        """
        attempt = 2 * (job.timeout_s + 60.0) + 120.0
        return attempt * (self.options.max_task_retries + 1)

    def _stuck(self, job: BlockJob, ref: Any) -> _Lost:
        with contextlib.suppress(RayError, TypeError, ValueError):
            ray.cancel(ref)
        message = (
            f"no verdict from Ray within {self._patience(job):.0f} s: the actor running "
            "this block died and could not be restarted (node lost, no free CPUs?)"
        )
        return _Lost(JobOutcome(result=_failure(job, "crash", message), cache=False))

    def _outcome(self, job: BlockJob, ref: Any) -> JobOutcome | _Lost:
        try:
            outcome: JobOutcome = ray.get(ref)
        except RayActorError as error:
            attempts = self.options.max_task_retries + 1
            message = (
                f"the Ray worker validating this block died {attempts} time(s) "
                f"({type(error).__name__}): the block crashes or exhausts its worker, or "
                f"the node was lost; {_first_line(error)}"
            )
            return _Lost(JobOutcome(result=_failure(job, "crash", message), cache=False))
        except RayTaskError as error:  # an exception in nnrag's own worker code
            message = f"the Ray worker failed: {_first_line(error)}"
            return JobOutcome(result=_failure(job, "internal-error", message), cache=False)
        except RayError as error:  # the result object was lost with its node, ...
            message = f"Ray lost this block's run ({type(error).__name__}): {_first_line(error)}"
            return _Lost(JobOutcome(result=_failure(job, "crash", message), cache=False))
        return outcome

    def _replace(self, slot: _Slot) -> _Slot | None:
        """Put a fresh actor in place of ``slot``'s (its own restarts may be exhausted).

        ``None`` (and one actor fewer) if the fresh one finds no room within
        :data:`REPLACE_TIMEOUT_S` (its node is gone and the others are full).
        """
        ray.kill(slot.actor, no_restart=True)
        fresh = self._new_slot()
        self.slots[self.slots.index(slot)] = fresh
        self.replaced += 1
        try:
            self._wait_ready(fresh, REPLACE_TIMEOUT_S)
        except ExecutorError:
            if fresh.info is not None or not _unplaced(fresh):
                raise
            ray.kill(fresh.actor, no_restart=True)
            self.slots.remove(fresh)
            return None
        return fresh

    def close(self) -> None:
        """Stop every actor (their sandbox servers die with them); leave Ray if we joined it."""
        stops = [slot.actor.close.remote() for slot in self.slots if slot.info is not None]
        if stops:
            with contextlib.suppress(RayError):  # a dead actor has nothing left to close
                ray.wait(stops, num_returns=len(stops), timeout=30.0)
        for slot in self.slots:
            ray.kill(slot.actor, no_restart=True)
        self.slots = []
        if self._owns_ray:
            ray.shutdown()


def connect(options: RayOptions) -> bool:
    """Start or join Ray as ``options`` say; ``False`` if this process had joined it already.

    Joining ships this nnrag to the workers (``py_modules``: Ray uploads it once per job,
    each node unpacks it once) unless ``options.ship_code`` is off. Ray accepts local
    folders only here, for the whole job: a caller that runs ``ray.init`` itself passes
    ``runtime_env={"py_modules": [...]}`` there, or installs nnrag on the cluster.
    """
    if ray.is_initialized():
        return False
    package = str(Path(nnrag.__file__).parent)
    try:
        ray.init(
            address=options.address,
            num_cpus=None if options.address else options.local_cpus,
            runtime_env={"py_modules": [package]} if options.ship_code else None,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    except Exception as error:  # Ray raises bare Exception too (a raylet start-up timeout)
        ray.shutdown()  # whatever half of a local instance did start
        where = options.address or "the default address (RAY_ADDRESS, else local)"
        raise ExecutorError(
            f"cannot start or join the Ray cluster at {where}: {error}; start one with "
            "`ray start --head` and pass --ray-address HOST:PORT, or drop --ray-address "
            "to start a local instance"
        ) from error
    return True


@dataclass(frozen=True, slots=True)
class _Lost:
    """An outcome made on the driver because the actor died: the actor gets replaced."""

    outcome: JobOutcome


def _unplaced(slot: _Slot) -> bool:
    """``slot``'s actor has not answered yet (as opposed to: it started and failed)."""
    ready, _ = ray.wait([slot.ready], timeout=0)
    return not ready


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


__all__ = ["READY_TIMEOUT_S", "REPLACE_TIMEOUT_S", "RayExecutor", "SandboxWorker", "connect"]
