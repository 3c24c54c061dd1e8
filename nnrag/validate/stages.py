"""Validation stages: static checks in-process, then import..backward in the sandbox."""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from nnrag.errors import ConfigError, ExtractionError, InternalError
from nnrag.model import (
    SEARCH_CPU_S,
    STAGES,
    BlockHints,
    BlockJob,
    Category,
    Diagnostic,
    JobOutcome,
    Stage,
    ValidationResult,
    stage_index,
)
from nnrag.recipes import recipe_from_dict
from nnrag.report import format_diagnostic
from nnrag.validate.frames import BlockReply, BlockRequest

if TYPE_CHECKING:
    from nnrag.check.pieces import Compiled
    from nnrag.index.build import Index
    from nnrag.model import BlockRef, Extracted, Settings
    from nnrag.plugins import Plugins
    from nnrag.validate.results import ResultCache
    from nnrag.validate.sandbox import Sandbox


class BlockSource(Protocol):
    """What :func:`validate_block` and the executors need of the workspace
    (``nnrag.workspace.Workspace``)."""

    settings: Settings

    def find(self, query: str) -> BlockRef: ...
    def index(self) -> Index: ...
    def extract(self, query: str | BlockRef) -> Extracted: ...
    def extraction_state(self) -> str: ...
    def block_file(self, extracted: Extracted) -> Path: ...
    def results(self) -> ResultCache: ...
    def sandbox(self) -> Sandbox: ...
    def plugins(self) -> Plugins: ...
    def blocks(self) -> tuple[BlockRef, ...]: ...


SANDBOX_STAGES: tuple[Stage, ...] = ("import", "instantiate", "forward", "backward")
_HEADER_CODES = frozenset({"NNR010", "NNR011", "NNR012"})
"""Header well-formedness is ``nnrag check``'s business, not the code's validity."""


def static_stages(
    code: str, *, filename: str, source_packages: frozenset[str], depth: Stage
) -> tuple[Stage | None, Stage | None, Category | None, str, dict[str, float]]:
    """Run parse, compile and closed: (reached, failed stage, category, message, timings).

    The statements this process parsed and compiled for earlier blocks are not parsed or
    compiled again (:func:`compiled_statements`: blocks of one source inline the same
    helpers); the findings are the same either way.
    """
    from nnrag.check.static import check_text
    from nnrag.diagnostics import unsuppressed

    timings: dict[str, float] = {}
    checked, _ = check_text(
        code,
        filename=filename,
        source_packages=source_packages,
        compiled=compiled_statements(),
        timings=timings,
    )
    # a line's noqa comment for a code leaves its finding out, as in ``nnrag check``
    findings = [f for f in unsuppressed(checked, code.splitlines()) if f.code not in _HEADER_CODES]
    reached: Stage | None = None
    for stage in ("parse", "compile", "closed"):
        if stage_index(stage) > stage_index(depth):
            break
        failing = [f for f in findings if f.stage == stage]
        if failing:
            first = failing[0]
            message = "; ".join(format_diagnostic(f, path=filename) for f in failing[:5])
            if len(failing) > 5:
                message += f"; and {len(failing) - 5} more"
            return reached, stage, first.category, message, _upto(timings, stage)
        reached = stage
    return reached, None, None, "", _upto(timings, depth)


COMPILED_LIMIT = 3000
"""Statements :func:`compiled_statements` keeps at most (about 40 KiB each, trees and code)."""
_compiled: list[Compiled] = []


def compiled_statements() -> Compiled:
    """This process's memo of the top-level statements the static stages parsed and compiled,
    emptied when it holds more than :data:`COMPILED_LIMIT` (memory stays bounded)."""
    from nnrag.check.pieces import Compiled

    if not _compiled or len(_compiled[0].trees) > COMPILED_LIMIT:
        _compiled[:] = [Compiled()]
    return _compiled[0]


def _upto(timings: dict[str, float], stage: Stage) -> dict[str, float]:
    return {k: v for k, v in timings.items() if stage_index(k) <= stage_index(stage)}  # type: ignore[arg-type]  # timings are keyed by stage names (Stage) only


def hints_request(hints: BlockHints | None) -> dict[str, Any] | None:
    """The sandbox request form of user hints."""
    if hints is None:
        return None
    return {
        "init_args": list(hints.init_args),
        "init_kwargs": dict(hints.init_kwargs),
        "inputs": None if hints.inputs is None else list(hints.inputs),
        "input_kwargs": dict(hints.input_kwargs),
    }


def run_validation(
    path: Path,
    *,
    block_id: str,
    class_name: str,
    depth: Stage = "forward",
    timeout_s: float = 60.0,
    search_cpu_s: float = SEARCH_CPU_S,
    hints: BlockHints | None = None,
    source_packages: frozenset[str] = frozenset(),
    sandbox: Sandbox | None = None,
    harvested: Sequence[Mapping[str, Any]] = (),
    harvest: bool = True,
    plugins: Mapping[str, Any] | None = None,
    replay: Mapping[str, Any] | None = None,
) -> tuple[ValidationResult, list[dict[str, Any]]]:
    """Validate one block file; also return the sub-block recipes harvested while it ran.

    ``replay``: a recorded recipe (``recipe_to_dict``) to rerun exactly, with no search.
    """
    if sandbox is not None and stage_index(depth) > stage_index("closed"):
        sandbox.start()  # the warm parent's start-up is not this block's time
    started = time.perf_counter()
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        result = ValidationResult(
            block_id=block_id,
            depth=depth,
            stage_reached=None,
            failed_stage="parse",
            category="syntax",
            message=f"{path}: cannot read the block file: {error}",
            file=str(path),
        )
        return result, []
    reached, failed, category, message, timings = static_stages(
        code, filename=str(path), source_packages=source_packages, depth=depth
    )
    if failed is not None or stage_index(depth) <= stage_index("closed"):
        result = ValidationResult(
            block_id=block_id,
            depth=depth,
            stage_reached=reached,
            failed_stage=failed,
            category=category,
            message=message,
            timings=timings,
            duration_s=time.perf_counter() - started,
            file=str(path),
        )
        return result, []
    request = BlockRequest(
        path=str(path.resolve()),
        class_name=class_name,
        module=block_id.rsplit(":", 2)[1] if block_id.count(":") >= 2 else "",
        depth=depth,
        timeout_s=timeout_s,
        search_cpu_s=search_cpu_s,
        hints=hints_request(hints),
        harvested=tuple(harvested),
        harvest=harvest,
        source_packages=tuple(sorted(source_packages)),
        reached=reached,
        seed=0,
        plugins=dict(plugins or {}),
    )
    if replay is not None:
        request = replace(request, replay=dict(replay), harvest=False, harvested=(), hints=None)
    if sandbox is None:
        from nnrag.validate.sandbox import Sandbox

        with Sandbox() as own:
            reply = own.run(request)
    else:
        reply = sandbox.run(request)
    result = result_from_reply(
        reply, block_id=block_id, depth=depth, timings=timings, file=str(path), started=started
    )
    memory_mb = sandbox.memory_mb if sandbox is not None else 4096
    result = replace(result, message=advice(result, timeout_s=timeout_s, memory_mb=memory_mb))
    return result, [dict(record) for record in reply.harvest]


def result_from_reply(
    reply: BlockReply,
    *,
    block_id: str,
    depth: Stage,
    timings: Mapping[str, float],
    file: str,
    started: float,
) -> ValidationResult:
    """A :class:`ValidationResult` from the sandbox's reply, after the static stages."""
    reached = cast(Stage, reply.stage_reached or "closed")  # checked by BlockReply.from_plain
    failed = cast("Stage | None", reply.failed_stage)
    category = cast("Category | None", reply.category)
    message = reply.message
    if failed is None and category is not None:
        position = STAGES.index(reached) + 1
        failed = STAGES[position] if position < len(STAGES) else None
    if category is None and failed is None and reached != depth:
        category, failed = "internal-error", STAGES[STAGES.index(reached) + 1]
        message = f"the sandbox stopped after {reached} without a verdict"
    recipe = reply.recipe
    return ValidationResult(
        block_id=block_id,
        depth=depth,
        stage_reached=reached,
        failed_stage=failed,
        category=category,
        message=message,
        recipe=recipe_from_dict(recipe) if isinstance(recipe, Mapping) else None,
        timings={**timings, **reply.timings},
        duration_s=time.perf_counter() - started,
        file=file,
        frames=reply.frames,
        notes=reply.notes,
    )


HINTS_ADVICE = (
    'to give this block its constructor arguments or inputs: a repos.json "hints" entry '
    "for it, or an nnrag_block_inputs hook (nnragfile.py beside repos.json, or conftest.py)"
)


def advice(result: ValidationResult, *, timeout_s: float, memory_mb: int = 4096) -> str:
    """The result's message plus what the user can do about its category."""
    message = result.message
    if result.category == "timeout" and "--nnrag-search-budget" not in message:
        # (an attempt the search's CPU budget stopped already names that budget's knob)
        return (
            f"wall-clock timeout after {timeout_s:g} s (--nnrag-timeout, nnrag validate "
            f"--timeout): {message}"
        )
    if result.category == "memory":
        return f"{message}; the sandbox limits a block's memory (address space) to {memory_mb} MiB"
    if result.category in {"ctor-args", "input-shape"}:
        return f"{message}\nhint: {HINTS_ADVICE}"
    return message


def validate_file(
    path: Path,
    *,
    block_id: str,
    class_name: str,
    depth: Stage = "forward",
    timeout_s: float = 60.0,
    search_cpu_s: float = SEARCH_CPU_S,
    hints: BlockHints | None = None,
    source_packages: frozenset[str] = frozenset(),
    sandbox: Sandbox | None = None,
) -> ValidationResult:
    """Validate one block file up to ``depth``; static stages here, the rest in the sandbox."""
    result, _ = run_validation(
        path,
        block_id=block_id,
        class_name=class_name,
        depth=depth,
        timeout_s=timeout_s,
        search_cpu_s=search_cpu_s,
        hints=hints,
        source_packages=source_packages,
        sandbox=sandbox,
    )
    return result


def config_hints(settings: Settings, block: BlockRef) -> BlockHints | None:
    """The first hints entry of the block's source whose pattern matches it."""
    names = (block.id, f"{block.module}:{block.name}", block.name)
    for spec in settings.sources:
        if spec.name != block.source:
            continue
        for hint in spec.hints:
            if any(fnmatch.fnmatchcase(name, hint.pattern) for name in names):
                return hint
    return None


def _hints_digest(hints: BlockHints) -> str:
    return _digest(hints_request(hints))


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def complete_harvests(workspace: BlockSource, validated: Iterable[str]) -> list[str]:
    """Freeze the harvest of every source whose blocks all ran (ids in ``validated``); return
    those sources. Called after a full pass (``nnrag validate --all``, a pytest session)."""
    done = set(validated)
    by_source: dict[str, list[str]] = {}
    for block in workspace.blocks():
        by_source.setdefault(block.source, []).append(block.id)
    cache = workspace.results()
    state = workspace.extraction_state()
    frozen = []
    for source, ids in sorted(by_source.items()):
        if all(i in done for i in ids) and not cache.harvest_complete(source, state):
            cache.complete_harvest(source, state)
            frozen.append(source)
    return frozen


def _validate_block(
    workspace: BlockSource,
    query: str | BlockRef,
    *,
    depth: Stage | None = None,
    hints: BlockHints | None = None,
    final_harvest: bool = False,
) -> ValidationResult:
    prepared = prepare_block(
        workspace, query, depth=depth, hints=hints, final_harvest=final_harvest
    )
    if isinstance(prepared, ValidationResult):
        return prepared
    return finish_job(workspace, prepared, run_job(prepared, sandbox=workspace.sandbox()))


def _unusable(
    block_id: str, depth: Stage, stage: Stage, category: Category, error: Exception
) -> ValidationResult:
    """The result of a block that cannot be run at all (its inputs or its extraction failed)."""
    return ValidationResult(
        block_id=block_id,
        depth=depth,
        stage_reached=None,
        failed_stage=stage,
        category=category,
        message=str(error),
    )


def _not_closed(block_id: str, depth: Stage, extracted: Extracted, path: Path) -> ValidationResult:
    """The result of a block whose closure has blocking problems: it fails ``closed``, with
    the first five problems and the dependency path to the first."""
    blocking = extracted.blocking_problems
    shown = "; ".join(format_diagnostic(p) for p in blocking[:5])
    more = len(blocking) - 5
    return ValidationResult(
        block_id=block_id,
        depth=depth,
        stage_reached="compile",
        failed_stage="closed",
        category=blocking[0].category,
        message=shown + (f"; and {more} more" if more > 0 else ""),
        dependency_path=blocking[0].dependency_path,
        file=str(path),
    )


def prepare_block(
    workspace: BlockSource,
    query: str | BlockRef,
    *,
    depth: Stage | None = None,
    hints: BlockHints | None = None,
    final_harvest: bool = False,
) -> ValidationResult | BlockJob:
    """Everything before the sandbox, on the driver: a result (cached, or decided by the
    closure) or the :class:`BlockJob` an executor runs. The block file is written here.

    ``final_harvest``: the harvest pass knows this block's harvest is final before its source
    is frozen (every block that can record its class ran) and that nothing this run would
    record is read by a verdict; a harvested block then gets the job it gets after the freeze
    (same recipes, same key), not a run that records (see ``nnrag.validate.harvesting``)."""
    from nnrag.validate.results import cache_key

    settings = workspace.settings
    depth = depth or settings.depth
    block = workspace.find(query) if isinstance(query, str) else query
    plugins = workspace.plugins()
    try:
        answer = None if hints else plugins.block_inputs(block.id, block.name)
    except ConfigError as error:  # one plugin's bad answer fails this block, not the run
        return _unusable(block.id, depth, "instantiate", "config", error)
    hints = hints or answer or config_hints(settings, block)
    suffix = (f"+hints:{_hints_digest(hints)}" if hints else "") + f"+plugins:{plugins.digest()}"
    # a verdict reached under other limits is not this one (a timeout may pass with more time)
    suffix += f"+limits:{settings.timeout_s:g}s,{settings.search_cpu_s:g}cpu"
    cache = workspace.results()
    state = workspace.extraction_state()
    # Harvested recipes only once the source's harvest pass is over, and a result is keyed by
    # the harvest it used: the verdict never depends on which blocks happened to run first.
    frozen = cache.harvest_complete(block.source, state)
    harvested = cache.harvested(block.source, block.name) if frozen or final_harvest else []
    recording_suffix = suffix  # the key of the run without harvested recipes (see below)
    if harvested:
        suffix += f"+harvest:{_digest(harvested)}"
    if not settings.revalidate:
        # Same sources, same nnrag code: the block's digest is known without extracting it.
        known = cache.extraction(block.id, state)
        cached = cache.get(cache_key(known[0] + suffix, depth)) if known else None
        if cached is None and known and harvested and frozen:
            cached = _kept_recording_verdict(
                workspace, block, known[0] + recording_suffix, depth, lambda: _read(known[1])
            )
        if cached is not None:
            # Results are content-addressed: the same body in another source (or module)
            # shares the result, but the report keys it by this block.
            return replace(cached, block_id=block.id, file=known[1] if known else cached.file)
    try:
        extracted = workspace.extract(block)
    except (ExtractionError, InternalError) as error:
        return _unusable(block.id, depth, "parse", "internal-error", error)
    facts = _extraction_facts(extracted)
    if harvested and frozen and not settings.revalidate and not extracted.blocking_problems:
        kept = _kept_recording_verdict(
            workspace, block, extracted.digest + recording_suffix, depth, lambda: extracted.code
        )
        if kept is not None:
            path = workspace.block_file(extracted)
            cache.put_extraction(block.id, state, extracted.digest, str(path))
            return replace(kept, block_id=block.id, file=str(path), **facts)
    # A block that does not close is keyed by its problems too: their text comes from the
    # extraction code, not the body, so a better message is not hidden by an older result.
    problems = extracted.blocking_problems
    if problems:
        suffix += f"+problems:{_digest([str(problem) for problem in problems])}"
    key = cache_key(extracted.digest + suffix, depth)
    path = workspace.block_file(extracted)
    cache.put_extraction(block.id, state, extracted.digest, str(path))
    if not settings.revalidate:
        cached = cache.get(key)
        if cached is not None:
            return replace(cached, block_id=block.id, file=str(path), **facts)
    if extracted.blocking_problems and stage_index(depth) >= stage_index("closed"):
        result = replace(_not_closed(block.id, depth, extracted, path), **facts)
        cache.put(key, result)
        return result
    data = path.read_bytes()
    return BlockJob(
        block_id=block.id,
        source=block.source,
        class_name=block.name,
        depth=depth,
        timeout_s=settings.timeout_s,
        search_cpu_s=settings.search_cpu_s,
        file=str(path),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        key=key,
        hints=hints,
        source_packages=workspace.index().source_packages(block.source),
        problems=extracted.problems,
        harvested=tuple(harvested),
        harvest=not frozen and not harvested,  # a harvested block's run is the frozen one
        plugins=plugins.child_spec(),
        facts=facts,
    )


def _kept_recording_verdict(
    workspace: BlockSource,
    block: BlockRef,
    recording_key: str,
    depth: Stage,
    code: Callable[[], str | None],
) -> ValidationResult | None:
    """The verdict a container keeps: a block whose file holds other blocks of its source
    (``nnrag.validate.containers``) ran in the harvest pass without harvested recipes, to record
    its parts; when that run (``recording_key``, before :func:`cache_key`) reached ``depth``,
    it is the verdict. Harvested recipes are for the blocks that need them: only a container
    that failed runs again with its own. Every container runs so in every pass, whatever the
    order, so the verdict does not depend on it; a leaf's verdict is always its harvested run."""
    from nnrag.validate.containers import holds_other_blocks
    from nnrag.validate.results import cache_key

    recorded = workspace.results().get(cache_key(recording_key, depth))
    if recorded is None or not recorded.passed:
        return None
    text = code()
    if text is None or not holds_other_blocks(text, block, workspace.blocks()):
        return None
    return recorded


def _read(path: str) -> str | None:
    """A block file's text, ``None`` when it is gone (the cache was cleaned under a run)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return None


def run_job(job: BlockJob, *, sandbox: Sandbox, path: Path | None = None) -> JobOutcome:
    """Run ``job``'s stages on its file (or on ``path``, a copy with the same bytes)."""
    result, records = run_validation(
        path or Path(job.file),
        block_id=job.block_id,
        class_name=job.class_name,
        depth=job.depth,
        timeout_s=job.timeout_s,
        search_cpu_s=job.search_cpu_s,
        hints=job.hints,
        source_packages=job.source_packages,
        sandbox=sandbox,
        harvested=job.harvested,
        harvest=job.harvest,
        plugins=job.plugins,
    )
    return JobOutcome(result=result, harvest=tuple(records))


def finish_job(workspace: BlockSource, job: BlockJob, outcome: JobOutcome) -> ValidationResult:
    """On the driver: store the harvest and the result, with any advisory problem blamed."""
    cache = workspace.results()
    if job.harvest:
        cache.add_harvest(job.source, outcome.harvest)
    result = replace(blame_advisory_problems(outcome.result, job.problems), **job.facts)
    if outcome.cache:
        cache.put(job.key, result)
    return result


def validate_block(
    workspace: BlockSource,
    query: str | BlockRef,
    *,
    depth: Stage | None = None,
    hints: BlockHints | None = None,
    final_harvest: bool = False,
) -> ValidationResult:
    """Extract, write and validate one block, through the workspace's result cache; the
    ``nnrag_result`` observers see every result, cached or not (``final_harvest``: see
    :func:`prepare_block`)."""
    block = workspace.find(query) if isinstance(query, str) else query
    result = _validate_block(
        workspace, block, depth=depth, hints=hints, final_harvest=final_harvest
    )
    workspace.plugins().observe(block.id, result)
    return result


def _extraction_facts(extracted: Extracted) -> dict[str, Any]:
    """What the report tells about a block file: extraction time (of the extraction itself,
    not of a later read of the process's memo), lines, inlined files."""
    own = extracted.block.source
    return {
        "extract_s": extracted.seconds,
        "lines": extracted.code.count("\n") + (not extracted.code.endswith("\n")),
        "source_files": len({(f.source, f.path) for f in extracted.files}),
        "linked_sources": tuple(sorted({f.source for f in extracted.files} - {own})),
    }


_EXPLAINS: dict[str, re.Pattern[str]] = {
    "resource-file": re.compile(
        r"FileNotFoundError|IsADirectoryError|No such file|TemplateNotFound|OSError"
    ),
    "dynamic-registry": re.compile(
        r"KeyError|LookupError|not registered|[Uu]nknown \w+|no \w+ named"
        r"|(?:module|type object) '[\w.]+' has no attribute"  # a namespace looked up by name
    ),
}
"""The run-time failures (by message) each advisory problem category can explain."""


def blame_advisory_problems(
    result: ValidationResult, problems: tuple[Diagnostic, ...]
) -> ValidationResult:
    """Name a known closure problem as the likely cause of a run-time failure it can explain.

    A missing resource file explains a file error, a registry left empty a failed lookup;
    anything else keeps its own category (pyg's MessagePassing reads its templates, then
    falls back when they are missing, so most of its failures are not about them).
    """
    if result.category != "runtime-error":
        return result
    message = result.message or ""
    cause = next(
        (p for p in problems if p.category in _EXPLAINS and _EXPLAINS[p.category].search(message)),
        None,
    )
    if cause is None:
        return result
    return replace(
        result,
        category=cause.category,
        message=f"{result.message} (likely cause: {format_diagnostic(cause)})",
        dependency_path=result.dependency_path or cause.dependency_path,
    )


def class_names(code: str) -> list[str]:
    """Top-level class names of a file (for validating plain files)."""
    return [node.name for node in ast.parse(code).body if isinstance(node, ast.ClassDef)]


__all__ = [
    "HINTS_ADVICE",
    "SANDBOX_STAGES",
    "advice",
    "blame_advisory_problems",
    "class_names",
    "complete_harvests",
    "config_hints",
    "finish_job",
    "prepare_block",
    "result_from_reply",
    "run_job",
    "run_validation",
    "static_stages",
    "validate_block",
    "validate_file",
]
