"""Plain data passed between nnrag's stages: frozen, slotted, keyword-only, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

# --------------------------------------------------------------------------- stages

Stage = Literal["parse", "compile", "closed", "import", "instantiate", "forward", "backward"]
STAGES: tuple[Stage, ...] = get_args(Stage)

Category = Literal[
    "syntax",
    "unresolved-name",
    "source-import",
    "missing-external",
    "native-op",
    "dynamic-registry",
    "resource-file",
    "ctor-args",
    "input-shape",
    "runtime-error",
    "non-finite",
    "timeout",
    "memory",
    "crash",
    "sandbox-violation",
    "config",
    "internal-error",
]
CATEGORIES: tuple[Category, ...] = get_args(Category)

BLOCKING_CATEGORIES: frozenset[Category] = frozenset(
    {"syntax", "unresolved-name", "source-import", "native-op"}
)
"""Closure problems that fail the ``closed`` stage. The others (``resource-file``,
``dynamic-registry``) are reported with the block but only matter if a later stage fails:
code often guards them (pyg's MessagePassing falls back when its templates are missing)."""

SourceKind = Literal["path", "git", "pypi"]

UnitKind = Literal["def", "class", "assign", "import", "if", "try", "with", "other"]


DEFAULT_EXTERN: tuple[str, ...] = ("torch",)
"""Packages never inlined, even where indexed: the runtime itself (torch.package's ``extern``)."""

SEARCH_CPU_S = 20.0
"""Default CPU seconds of the sandbox child's constructor/input search (``--nnrag-search-budget``):
counted in CPU time, so a verdict does not depend on how loaded the machine is."""


def stage_index(stage: Stage) -> int:
    """Position of ``stage`` in the pipeline (``parse`` is 0)."""
    return STAGES.index(stage)


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockHints:
    """User-given constructor arguments and forward inputs for one block (always win).

    ``inputs`` items are JSON values: a tensor spec ``{"shape": [1, 3, 32, 32],
    "dtype": "float32"}`` (``"high"`` bounds integer tensors) or a plain literal.
    """

    pattern: str
    init_args: tuple[object, ...] = ()
    init_kwargs: Mapping[str, object] = field(default_factory=dict)
    inputs: tuple[object, ...] | None = None
    input_kwargs: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSpec:
    """One entry of ``repos.json``: where a source's code comes from and what is in scope."""

    name: str
    kind: SourceKind
    location: str
    """Absolute folder for ``path``, clone URL for ``git``, PEP 508 requirement for ``pypi``."""
    ref: str | None = None
    paths: tuple[str, ...] = ()
    """Globs or folder/file prefixes (relative to the source root) that are indexed."""
    include: tuple[str, ...] = ()
    """fnmatch patterns on ``module:Class`` or ``Class``; empty means everything."""
    exclude: tuple[str, ...] = ()
    priority: int = 0
    hints: tuple[BlockHints, ...] = ()
    xfail: tuple[tuple[str, str], ...] = ()
    """(pattern, reason): blocks expected to fail (patterns as for ``include``, or a block id)."""
    skip: tuple[tuple[str, str], ...] = ()
    """(pattern, reason): blocks not validated at all."""
    config_file: Path | None = None
    entry: str = ""
    """How the entry is named in messages, e.g. ``sources[2] ("timm")``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything a run needs, built once from repos.json, ini options and flags."""

    sources: tuple[SourceSpec, ...]
    cache_dir: Path
    repos_file: Path | None = None
    depth: Stage = "forward"
    timeout_s: float = 60.0
    search_cpu_s: float = SEARCH_CPU_S
    """CPU seconds the sandbox child's constructor/input search may use (``timeout_s`` stays
    the wall-clock guard)."""
    revalidate: bool = False
    jobs: int | None = None
    """Worker processes for parsing (``None``: one per core)."""
    sandbox: Literal["default", "strict"] = "default"
    """``strict``: refuse to run blocks unless every kernel isolation layer is active."""
    extern: tuple[str, ...] = DEFAULT_EXTERN
    """Packages kept as imports even where a source indexes them (repos.json ``extern``)."""


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkout:
    """A source materialized on disk, ready to index."""

    spec: SourceSpec
    root: Path
    """Folder whose files are indexed; module names are derived from package folders in it."""
    revision: str
    """Git commit, distribution version, or content hash of a local folder's files."""
    origin: str
    """Human-readable origin: the git URL, ``timm==1.0.31``, or the local path."""
    license: str | None = None
    """SPDX identifier, where found."""


# --------------------------------------------------------------------------- index


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportBinding:
    """A name bound by an import statement at module level."""

    name: str
    """Local name bound (``F`` for ``import torch.nn.functional as F``).

    ``torch`` for ``import torch.nn``.
    """

    module: str
    """Absolute module imported from (relative imports already resolved)."""
    attr: str | None
    """``y`` for ``from x import y``; ``None`` for ``import x``; ``*`` for a star import."""
    level: int = 0
    """Relative level as written (0 = absolute)."""
    conditional: bool = False
    """Inside an ``if``/``try``/``with`` at module level."""
    type_checking: bool = False
    """Inside ``if TYPE_CHECKING:`` (not a runtime dependency)."""
    line: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassInfo:
    """What discovery, specs and search need to know about a top-level class."""

    name: str
    bases: tuple[str, ...]
    """Each base as a dotted chain (``nn.Module``); ``""`` for a base that is not a name chain."""
    metaclass: str | None = None
    methods: tuple[str, ...] = ()
    abstract_methods: tuple[str, ...] = ()
    """Methods decorated with ``abstractmethod`` in this class body."""
    docstring: str | None = None
    init_signature: str | None = None
    """``__init__``'s parameters as written (without ``self``), or ``None`` if not defined here."""
    forward_signature: str | None = None
    line: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Unit:
    """One top-level statement (kept whole) and the module-level names it binds and reads."""

    index: int
    kind: UnitKind
    start_line: int
    """1-based, including decorators and leading comments that belong to it."""
    end_line: int
    """1-based, inclusive."""
    binds: tuple[str, ...]
    load_reads: tuple[str, ...]
    """Dotted chains rooted at module-level names, read when the unit executes (``nn.Module``)."""
    call_reads: tuple[str, ...]
    """Dotted chains rooted at module-level names, read only when a function defined here runs."""
    annotation_reads: tuple[str, ...] = ()
    """The call reads that appear only in annotations Python never evaluates (local variables,
    or any annotation under ``from __future__ import annotations``): a name there that
    resolves nowhere cannot fail at run time."""
    imports: tuple[ImportBinding, ...] = ()
    classes: tuple[ClassInfo, ...] = ()
    type_checking: bool = False
    """The unit is ``if TYPE_CHECKING: ...``."""
    assigns: tuple[str, ...] = ()
    """The names of :attr:`binds` the unit binds otherwise than by a module-level import
    (def, class, assignment, loop or ``with`` target): an ``if`` unit that binds a name
    only by imports of one object binds that object whichever branch runs."""
    rebinds: tuple[str, ...] = ()
    """The names of :attr:`binds` the unit binds only when a function of it runs (``global
    x`` then ``x = ...`` in a def, such as a setter ``set_exportable(mode)``): it does not
    give them their value while the module runs, so a read of such a name needs the unit
    only if nothing binds the name at module level."""
    binds_computed: bool = False
    """The unit binds module names by keys it computes (``globals()[name] = ...``, a loop
    that wraps each class of another module): which names, no list of the module says, so
    a read of a name nothing else in the module binds resolves to such units."""
    local_imports: tuple[ImportBinding, ...] = ()
    """Imports inside function or class bodies of the unit: they bind local names only
    (not module names), run at call time (class bodies: at load time), and their text is
    copied with the unit, so relative or source-package imports here need rewriting."""
    local_reads: tuple[tuple[str, int], ...] = ()
    """Dotted chains rooted at names bound by :attr:`local_imports` (``aggr.Aggregation``,
    bare ``aggr`` when the module object itself is used), each with the line of the local
    import that binds its root. Read at call time (class bodies: at load time)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModuleInfo:
    """The index entry of one Python file."""

    source: str
    module: str
    path: str
    """POSIX path relative to the checkout root."""
    sha1: str
    """Git blob SHA-1 of the file's bytes; its SWHID is ``swh:1:cnt:<sha1>``."""
    is_package: bool = False
    lines: int = 0
    future: tuple[str, ...] = ()
    all_names: tuple[str, ...] | None = None
    star_imports: tuple[str, ...] = ()
    """Absolute modules imported with ``from m import *``."""
    units: tuple[Unit, ...] = ()

    @property
    def swhid(self) -> str:
        return f"swh:1:cnt:{self.sha1}"


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexStats:
    """What one indexing run did."""

    sources: int
    files: int
    modules: int
    blocks: int
    parsed: int
    """Files (re)parsed in this run; the rest came from the index unchanged."""
    lines: int
    seconds: float
    problems: tuple[Diagnostic, ...] = ()
    source_errors: tuple[str, ...] = ()
    """Sources that could not be materialized (message each); the others were indexed."""
    unfetched: Mapping[str, str] = field(default_factory=dict)
    """The same by source name: why each could not be fetched or read."""
    warnings: tuple[str, ...] = ()
    """Configuration that has no effect (an ``extern`` pattern matching nothing), one each."""


# --------------------------------------------------------------------------- diagnostics


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """One thing nnrag found wrong, where: a static-check finding, a file the index could not
    read, a closure problem. Made only by :func:`nnrag.diagnostics.diagnostic` (its code fixes
    its category and stage); rendered only by :mod:`nnrag.report`."""

    code: str
    """Stable code, e.g. ``NNR101`` (every code: :data:`nnrag.diagnostics.CODES`)."""
    category: Category
    stage: Stage
    """The stage it fails (``closed`` for a closure problem of a blocking category)."""
    message: str
    path: str = ""
    """The file: a block file (check), a path relative to its source root (index, closure)."""
    line: int = 0
    col: int = 0
    """1-based; 0 where unknown (the whole file)."""
    source: str = ""
    """The configured source the file belongs to (index diagnostics)."""
    dependency_path: tuple[str, ...] = ()
    """Closure problems: from the block to the definition that has the problem, e.g.
    ``("Target", "helper", "_lookup")``."""

    @property
    def location(self) -> str:
        """``path:line:col``."""
        return f"{self.path}:{self.line}:{self.col}"


# --------------------------------------------------------------------------- blocks


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockRef:
    """A discovered block: a top-level ``nn.Module`` subclass with a ``forward``."""

    source: str
    module: str
    name: str
    path: str
    line: int
    docstring: str | None = None
    init_signature: str | None = None
    forward_signature: str | None = None

    @property
    def id(self) -> str:
        return f"{self.source}:{self.module}:{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitRef:
    """One unit of one indexed module, as included in a closure."""

    source: str
    module: str
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Closure:
    """The result of resolution: what a block needs, in definition-before-use order."""

    block: BlockRef
    units: tuple[UnitRef, ...]
    """Internal units to inline, ordered so that load-time dependencies come first."""
    imports: tuple[ImportBinding, ...]
    """External imports kept as imports (as written in their source module)."""
    renames: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(module, name) -> flat name in the emitted file, where a collision forced a rename."""
    problems: tuple[Diagnostic, ...] = ()
    references: Mapping[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """Optional, for emit: (module of an included unit, dotted chain read there, e.g.
    ``layers.Mlp`` or ``_Mlp``) -> (module, name) of the inlined definition it denotes. Emit
    rewrites the chain to that definition's flat name. When a chain is missing, emit resolves
    it itself through the index's import bindings."""
    namespaces: Mapping[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)
    """Internal modules used as objects (a local ``import a.b as m``, ``vars(m)``, ``m`` passed
    as a value) -> their members ``(attr, module, name)``: ``name`` as bound in ``module`` (an
    inlined definition or a kept import), ``""`` for the namespace of the submodule ``module``,
    or ``"__name__"`` for the module's name. Emit writes one
    ``types.SimpleNamespace`` per module after its members; ``references`` map a chain that
    denotes the module object to ``(module, "")``."""
    registrations: tuple[Registration, ...] = ()
    """Registrations carried because the closure reaches their type string (their units are
    among :attr:`units`)."""
    pruned: Mapping[tuple[str, str, int], tuple[str, ...]] = field(default_factory=dict)
    """(source, module, unit index) of a plain helper class -> the methods no code of the
    closure can call (no kept code reads an attribute of that name): left out of the block
    (see :mod:`nnrag.extract.methods`)."""
    stand_ins: tuple[tuple[str, str, int], ...] = ()
    """(source, module, unit index) of classes the closure only tests against
    (``isinstance``) or names in annotations: emitted as an empty class of the same name."""
    unread: tuple[tuple[str, str, int], ...] = ()
    """Those of :attr:`stand_ins` the closure only imports under a guard
    (``try: from x import A``) and never reads: an empty class, or a function that raises."""
    unregistered: tuple[tuple[str, str, int], ...] = ()
    """(source, module, unit index) of classes and functions emitted without their
    registering decorators (``@MODELS.register_module()``): no other code of the closure
    holds that registry, and none names the key, so no code of the block file could find
    the entry (the registry is left out with them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Registration:
    """One entry a unit puts into a registry: ``@MODELS.register_module()`` on a class,
    ``MODELS.register_module('BN', module=nn.BatchNorm2d)``, ``@register_model`` on a def."""

    registry: str
    """The registry as ``module:name``: the root of its family when registries are chained by
    ``parent=`` (a child scope finds its parent's entries)."""
    key: str
    """The type string it is registered under."""
    source: str
    module: str
    unit: int
    """Index of the registering unit in its module."""

    def __str__(self) -> str:
        return f"{self.registry}[{self.key!r}]"


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFile:
    """A source file that contributed to an extracted block (for provenance)."""

    source: str
    path: str
    sha1: str

    @property
    def swhid(self) -> str:
        return f"swh:1:cnt:{self.sha1}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Extracted:
    """An emitted standalone block file and what it was made from."""

    block: BlockRef
    code: str
    digest: str
    """``sha256:<hex>`` of the body (everything after the provenance header)."""
    requirements: tuple[str, ...]
    """PEP 508 strings of external distributions the block imports."""
    files: tuple[SourceFile, ...]
    problems: tuple[Diagnostic, ...] = ()
    dependencies: tuple[str, ...] = ()
    """Qualified names of the inlined definitions (``module.name``)."""
    registrations: tuple[Registration, ...] = ()
    """Registry entries carried for the type strings the closure reaches."""
    file_lines: Mapping[str, int] = field(default_factory=dict)
    """Per inlined source file (``source:path``): how many of its lines the block holds."""
    seconds: float = 0.0
    """Wall seconds the extraction took (closure and emission), however often it is read."""

    @property
    def lines(self) -> int:
        """Lines of the emitted file (header included)."""
        return self.code.count("\n") + (0 if self.code.endswith("\n") or not self.code else 1)

    @property
    def source_files(self) -> int:
        """How many source files the block inlines definitions from."""
        return len(self.files)

    @property
    def blocking_problems(self) -> tuple[Diagnostic, ...]:
        """The problems that make the file not closed (see :data:`BLOCKING_CATEGORIES`)."""
        return tuple(p for p in self.problems if p.category in BLOCKING_CATEGORIES)

    @property
    def closed(self) -> bool:
        """No unresolved name, no import of a source package or of its compiled extensions."""
        return not self.blocking_problems


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True, slots=True, kw_only=True)
class Recipe:
    """How a block was instantiated and fed, so a result can be reproduced."""

    origin: Literal["hinted", "harvested", "synthesized", "none"] = "none"
    init_args: tuple[object, ...] = ()
    init_kwargs: Mapping[str, object] = field(default_factory=dict)
    inputs: tuple[object, ...] = ()
    """Input specs (JSON values) that were used, with their seed."""
    input_kwargs: Mapping[str, object] = field(default_factory=dict)
    seed: int = 0
    input_seed: int | None = None
    """Seed the inputs were drawn with (``seed`` unless a non-finite output was retried)."""
    output_shapes: tuple[object, ...] = ()
    parameters: int | None = None
    attempts: int = 0
    output_digest: str | None = None
    """SHA-1 (16 hex digits) over the output tensors of the recorded forward."""
    lossless: bool = True
    """Every value is written as a constructor expression (``nnrag replay`` rebuilds it)."""
    lossy: tuple[str, ...] = ()
    """Where a value could only be kept as ``repr()`` (then ``lossless`` is false)."""
    placeholders: tuple[str, ...] = ()
    """Arguments nnrag could only fill with stand-ins (``nn.Identity()``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """A block rebuilt and rerun from its recorded recipe (``nnrag replay``)."""

    block_id: str
    recorded: ValidationResult
    replayed: ValidationResult
    differences: tuple[str, ...] = ()
    """What differs between the two runs (empty: the recipe reproduces its outcome)."""

    @property
    def reproduced(self) -> bool:
        return not self.differences


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationResult:
    """How far one block got through the stages, and why it stopped."""

    block_id: str
    depth: Stage
    stage_reached: Stage | None
    """The last stage that passed (``None``: not even ``parse``)."""
    failed_stage: Stage | None = None
    category: Category | None = None
    message: str = ""
    dependency_path: tuple[str, ...] = ()
    recipe: Recipe | None = None
    frames: tuple[str, ...] = ()
    """Traceback frames in the block file (``path:line in function: code``), oldest first."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Seconds per stage that ran."""
    duration_s: float = 0.0
    cached: bool = False
    file: str | None = None
    """Path of the extracted file the result is about."""
    extract_s: float | None = None
    """Seconds resolving and emitting the block took (``None``: not extracted in this run
    and not known from the cache)."""
    lines: int | None = None
    """Lines of the emitted block file (header included)."""
    source_files: int | None = None
    """Source files the block's closure inlines."""
    linked_sources: tuple[str, ...] = ()
    """Other sources whose code the block inlines (sharding keeps them together)."""
    notes: tuple[str, ...] = ()
    """What the sandbox refused the block and the block handled (a capability probe, e.g. a
    network socket): shown in the report, no effect on the verdict."""

    @property
    def passed(self) -> bool:
        return self.failed_stage is None and self.stage_reached == self.depth


# --------------------------------------------------------------------------- execution


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockJob:
    """One block file to run through the stages: everything a worker needs, and no more.

    The driver builds it (extraction, result cache, hints); an executor runs it anywhere:
    in this process's sandbox, or on a Ray worker that receives the file's bytes by
    content address (``sha256``) instead of reading ``file``.
    """

    block_id: str
    source: str
    class_name: str
    depth: Stage
    timeout_s: float
    file: str
    """Path of the block file on the driver: what results and reports name."""
    sha256: str
    """Content address of the file's bytes: a worker validates exactly these bytes."""
    size: int
    """Bytes in the file: the scheduling weight (largest first)."""
    key: tuple[str, str, str, str]
    """Result cache key (body digest, depth, validator version, torch version)."""
    hints: BlockHints | None = None
    source_packages: frozenset[str] = frozenset()
    problems: tuple[Diagnostic, ...] = ()
    """Advisory closure problems: named as the likely cause of a run-time failure."""
    harvested: tuple[Mapping[str, object], ...] = ()
    """Recipes recorded for this class while composite blocks ran, once its source's harvest
    pass is complete, or the pass knows them final (part of the result key, so a verdict
    never depends on run order)."""
    harvest: bool = True
    """Record the sub-block recipes this run sees (the harvest pass; off once it is complete,
    and for a run with harvested recipes)."""
    search_cpu_s: float = SEARCH_CPU_S
    """CPU seconds the constructor/input search may use (:attr:`Settings.search_cpu_s`)."""
    plugins: Mapping[str, Any] | None = None
    """The plugins the sandbox child loads (``Plugins.child_spec()``: plain data)."""
    facts: Mapping[str, Any] = field(default_factory=dict)
    """What the report tells about the block file (extraction time, lines, inlined files)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOutcome:
    """What running a :class:`BlockJob` gave: the result and the sub-block recipes harvested."""

    result: ValidationResult
    harvest: tuple[Mapping[str, object], ...] = ()
    cache: bool = True
    """Store the result in the result cache (not when the run, not the block, failed it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RayOptions:
    """How the Ray executor uses a cluster (``nnrag validate --all --executor ray``)."""

    address: str | None = None
    """Cluster to join (``ray.init(address=...)``); ``None``: Ray's default (``RAY_ADDRESS``,
    else a new local instance)."""
    local_cpus: int | None = None
    """CPUs of a new local instance (default: every CPU of this machine)."""
    cpus_per_actor: float = 1.0
    """Each actor reserves this many CPUs and holds one warm sandbox."""
    actors: int | None = None
    """How many actors (default: the cluster's CPUs divided by ``cpus_per_actor``)."""
    max_task_retries: int = 2
    """Re-runs of a block whose actor died under it; then the block is a ``crash``."""
    memory_mb: int = 4096
    """Memory limit of each sandbox child, as in a local run."""
    ship_code: bool = True
    """Send this nnrag to the workers (``runtime_env`` ``py_modules``) instead of relying on
    the cluster's installed copy."""
