"""Every diagnostic code nnrag emits (code -> category, stage, template), and their constructor.

A :class:`~nnrag.model.Diagnostic` is made only here, from its code, so a code always has
the same category and stage (pyflakes' ``messages.py``: one entry per code, rendering
elsewhere, in :mod:`nnrag.report`). Codes are stable: users filter on them (``nnrag check
--select/--ignore``, ``# noqa: NNR101``), tools read them from the JSON outputs.

=======  ================  =========  ========  ==============================================
code     category          stage      from      meaning
=======  ================  =========  ========  ==============================================
NNR001   syntax            parse      check     the block file does not parse (or is not UTF-8)
NNR002   syntax            compile    check     it parses but does not compile
NNR010   syntax            closed     check     the provenance header is missing
NNR011   syntax            closed     check     the provenance header is malformed (one per issue)
NNR012   syntax            closed     check     ``--pristine``: the body does not match its digest
NNR101   unresolved-name   closed     check     a free name is bound nowhere
NNR102   unresolved-name   closed     check     a name is read at import time before it is bound
                                                (or after a module-level ``del``)
NNR103   unresolved-name   closed     check     ``from m import *`` hides where names come from
NNR104   unresolved-name   closed     check     an ``__all__`` entry names nothing in the file
NNR105   unresolved-name   closed     check     a name bound only under ``if TYPE_CHECKING:`` is
                                                used at run time
NNR201   source-import     closed     check     a relative import
NNR202   source-import     closed     check     an import of one of the block's source packages
NNR203   missing-external  closed     check     an import neither stdlib, installed nor declared
NNR301   (what failed)     (where)    check     ``check --import``: the sandboxed import failed
NNR401   config            parse      index     a file or folder of a source cannot be read
NNR402   syntax            parse      index     a source file is not text nnrag can decode
NNR403   syntax            parse      index     a source file does not parse
NNR404   syntax            parse      index     a source file is too deeply nested to analyze
NNR405   config            parse      index     a source file is too large (generated?), skipped
NNR406   config            parse      index     a ``paths`` entry matches no ``.py`` file
NNR407   config            parse      index     a symlink loop under a source, skipped
NNR408   syntax            parse      index     a source file cannot be parsed (null bytes, memory)
NNR409   internal-error    parse      index     nnrag failed analyzing a file (please report it)
NNR501   unresolved-name   closed     resolve   a name the closure needs is defined nowhere
NNR502   source-import     closed     resolve   an import of a source module that is not indexed
NNR503   native-op         closed     resolve   a static import of a compiled extension of a source
                                                (``from pkg import _C``); not a call of
                                                ``torch.ops.<source package>.op``, nor an import
                                                by name (``pkg._ext``): the block file loads
                                                those from the installed distribution and
                                                fails as ``native-op`` only where it calls one
                                                that is absent (:mod:`nnrag.extract.dynimport`)
NNR504   dynamic-registry  closed     resolve   a lookup by a key computed at run time (a registry,
                                                ``getattr(module, name)``, ``importlib``)
NNR505   resource-file     closed     resolve   a file read relative to the module (``__file__``)
NNR506   runtime-error     closed     resolve   a name read in a function that its own module binds
                                                nowhere: the original raises ``NameError`` where
                                                that line runs, and so does the block (kept as
                                                written, the line marked ``# noqa: NNR101``)
NNR509   internal-error    closed     resolve   nnrag could not rewrite a unit (kept as written)
=======  ================  =========  ========  ==============================================

The ``check`` codes are the pre-commit hook's (:mod:`nnrag.check.static`); the ``index``
codes are files a source could not contribute (``nnrag index``, the plugin's
``<parse-errors>`` item); the ``resolve`` codes are a closure's problems, each with the
dependency path from the block to the definition that has it (``nnrag extract``, the block
spec, the ``closed`` stage). Only the blocking categories
(:data:`~nnrag.model.BLOCKING_CATEGORIES`) fail a block's ``closed`` stage.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from nnrag.model import Category, Diagnostic, Stage

__all__ = [
    "CLOSURE_CODES",
    "CODES",
    "NOQA_COMMENT",
    "Code",
    "closure_problem",
    "diagnostic",
    "restore",
    "split_location",
    "suppressed",
    "unsuppressed",
]

Origin = Literal["check", "index", "resolve"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Code:
    """One registry entry: what a code means and how its message reads."""

    code: str
    category: Category | None
    """``None``: the category of what failed (NNR301 reports the sandbox's)."""
    stage: Stage | None
    """``None``: the stage that failed (NNR301)."""
    origin: Origin
    """The part of nnrag that emits it."""
    template: str
    """The message, ``str.format`` fields filled by :func:`diagnostic`'s keywords."""


def _codes(*entries: tuple[str, Category | None, Stage | None, Origin, str]) -> Mapping[str, Code]:
    table = {
        code: Code(code=code, category=category, stage=stage, origin=origin, template=template)
        for code, category, stage, origin, template in entries
    }
    return MappingProxyType(table)


_RESTORE = (
    "; keep the edit (and drop --pristine for this file), or restore the vendored version "
    "with `nnrag refresh --force` (discards the edit)"
)
_NOT_INDEXED = "; the file is not indexed (fix it, or leave it out with the source's `paths`)"

CODES: Mapping[str, Code] = _codes(
    ("NNR001", "syntax", "parse", "check", "does not parse: {error}"),
    ("NNR002", "syntax", "compile", "check", "does not compile: {error}"),
    (
        "NNR010",
        "syntax",
        "closed",
        "check",
        "missing nnrag header: line 1 must start with '# nnrag block: <source>:<module>:<Class>', "
        "{found}",
    ),
    ("NNR011", "syntax", "closed", "check", "{issue}"),
    (
        "NNR012",
        "syntax",
        "closed",
        "check",
        "body edited since extraction (header digest {recorded}..., body now {actual}...)"
        "{changes}" + _RESTORE,
    ),
    (
        "NNR101",
        "unresolved-name",
        "closed",
        "check",
        "undefined name {name!r}: not defined in the block, not imported, not a builtin{hint}",
    ),
    (
        "NNR102",
        "unresolved-name",
        "closed",
        "check",
        "{name!r} is {why}",
    ),
    (
        "NNR103",
        "unresolved-name",
        "closed",
        "check",
        "'from {module} import *' hides where names come from ({names} resolve to nothing "
        "else); import them explicitly",
    ),
    (
        "NNR104",
        "unresolved-name",
        "closed",
        "check",
        "__all__ lists {name!r}, which the block does not define",
    ),
    (
        "NNR105",
        "unresolved-name",
        "closed",
        "check",
        "{name!r} is imported only under 'if TYPE_CHECKING:' but used at run time; import it "
        "unconditionally",
    ),
    (
        "NNR201",
        "source-import",
        "closed",
        "check",
        "relative import 'from {written} import ...': a vendored block must be standalone; "
        "re-extract it or inline the definitions it needs",
    ),
    (
        "NNR202",
        "source-import",
        "closed",
        "check",
        "imports {module!r} from the block's source package {top!r}; a closed block never "
        "imports its source (re-extract it to inline the definitions)",
    ),
    (
        "NNR203",
        "missing-external",
        "closed",
        "check",
        "imports {module!r}, which is not in the standard library, not installed and not "
        "declared in a '# requires:' header line",
    ),
    ("NNR301", None, None, "check", "{stage} failed [{category}]: {detail}"),
    ("NNR401", "config", "parse", "index", "cannot read: {error}"),
    ("NNR402", "syntax", "parse", "index", "{error}" + _NOT_INDEXED),
    ("NNR403", "syntax", "parse", "index", "syntax error: {error}" + _NOT_INDEXED),
    ("NNR404", "syntax", "parse", "index", "too deeply nested to analyze; {advice}" + _NOT_INDEXED),
    (
        "NNR405",
        "config",
        "parse",
        "index",
        "too large ({megabytes:.1f} MB > {limit:.1f} MB), generated? skipped",
    ),
    (
        "NNR406",
        "config",
        "parse",
        "index",
        "this 'paths' entry matches no .py file; check it (a folder or file prefix, or a "
        "glob, relative to the source root)",
    ),
    (
        "NNR407",
        "config",
        "parse",
        "index",
        "symlink loop: {detail}",
    ),
    ("NNR408", "syntax", "parse", "index", "cannot parse: {error}" + _NOT_INDEXED),
    (
        "NNR409",
        "internal-error",
        "parse",
        "index",
        "internal error in nnrag while analyzing this file (please report it): {error}",
    ),
    ("NNR501", "unresolved-name", "closed", "resolve", "{detail}"),
    ("NNR502", "source-import", "closed", "resolve", "{detail}"),
    ("NNR503", "native-op", "closed", "resolve", "{detail}"),
    ("NNR504", "dynamic-registry", "closed", "resolve", "{detail}"),
    ("NNR505", "resource-file", "closed", "resolve", "{detail}"),
    ("NNR506", "runtime-error", "closed", "resolve", "{detail}"),
    ("NNR509", "internal-error", "closed", "resolve", "could not rewrite unit: {detail}"),
)
"""Every code nnrag emits (the table in this module's docstring)."""

CLOSURE_CODES: Mapping[Category, str] = MappingProxyType(
    {
        entry.category: code
        for code, entry in CODES.items()
        if entry.origin == "resolve" and entry.category is not None
    }
)
"""A closure problem's code, by its category (resolution finds problems by kind)."""


def diagnostic(
    code: str,
    *,
    path: str = "",
    line: int = 0,
    col: int = 0,
    source: str = "",
    dependency_path: tuple[str, ...] = (),
    category: Category | None = None,
    stage: Stage | None = None,
    **fields: object,
) -> Diagnostic:
    """The diagnostic ``code`` at ``path:line:col``, its message the code's template filled
    with ``fields``; its category and stage are the code's (``category``/``stage`` are
    required for a code whose registry entry has none, NNR301, and refused otherwise)."""
    category, stage = _category_stage(code, category, stage)
    return Diagnostic(
        code=code,
        category=category,
        stage=stage,
        message=CODES[code].template.format(category=category, stage=stage, **fields),
        path=path,
        line=line,
        col=col,
        source=source,
        dependency_path=dependency_path,
    )


def restore(
    code: str,
    message: str,
    *,
    path: str = "",
    line: int = 0,
    col: int = 0,
    source: str = "",
    category: Category | None = None,
    stage: Stage | None = None,
) -> Diagnostic:
    """A diagnostic read back from where nnrag stored it (the check cache, the index), its
    message as rendered then; its category and stage are the code's, as when it was made."""
    category, stage = _category_stage(code, category, stage)
    return Diagnostic(
        code=code,
        category=category,
        stage=stage,
        message=message,
        path=path,
        line=line,
        col=col,
        source=source,
    )


def _category_stage(
    code: str, category: Category | None, stage: Stage | None
) -> tuple[Category, Stage]:
    entry = CODES.get(code)
    if entry is None:
        raise KeyError(f"unknown diagnostic code {code!r}; every code is listed in CODES")
    if (category is not None and entry.category is not None) or (
        stage is not None and entry.stage is not None
    ):
        raise ValueError(f"{code} has a fixed category and stage ({entry.category}, {entry.stage})")
    category = entry.category or category
    stage = entry.stage or stage
    if category is None or stage is None:
        raise ValueError(f"{code} needs the category and stage of what failed")
    return category, stage


def split_location(where: str) -> tuple[str, int, int]:
    """``("a/b.py", 3, 1)`` of ``"a/b.py:3:1"`` (line and column 0 where absent)."""
    rest, _, col = where.rpartition(":")
    path, _, line = rest.rpartition(":")
    if not (line.isdigit() and col.isdigit()):
        return where, 0, 0
    return path, int(line), int(col)


def closure_problem(
    category: Category, message: str, *, where: str, dependency_path: tuple[str, ...] = ()
) -> Diagnostic:
    """A closure problem of ``category`` (its NNR5xx code) at ``where`` (``path:line:col``)."""
    path, line, col = split_location(where)
    return diagnostic(
        CLOSURE_CODES[category],
        path=path,
        line=line,
        col=col,
        dependency_path=dependency_path,
        detail=message,
    )


# -- noqa ------------------------------------------------------------------------------------

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.I)

NOQA_COMMENT = "  # noqa: NNR101"
"""What nnrag appends to a line that reads a name the original module binds nowhere either
(the block keeps the read as written, as the original runs it)."""


def suppressed(line: str, code: str) -> bool:
    """Whether ``line`` carries ``# noqa`` (every code) or ``# noqa: CODE[, CODE]`` for ``code``."""
    match = _NOQA.search(line)
    if match is None:
        return False
    listed = match.group("codes")
    return listed is None or code in {c.strip().upper() for c in listed.split(",")}


def unsuppressed(findings: Iterable[Diagnostic], lines: Sequence[str]) -> list[Diagnostic]:
    """The findings whose line (1-based, in ``lines``) carries no ``# noqa`` for their code."""
    return [
        finding
        for finding in findings
        if not 1 <= finding.line <= len(lines)
        or not suppressed(lines[finding.line - 1], finding.code)
    ]
