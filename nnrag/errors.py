"""nnrag's error hierarchy: located, actionable, picklable across processes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class NnragError(Exception):
    """Base of every error nnrag raises on purpose.

    Subclasses keep structured attributes and pass them all to ``__init__`` by
    keyword so that ``pickle`` (xdist, process pools) rebuilds them unchanged.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.__dict__))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[NnragError], state: dict[str, object]) -> NnragError:
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("message", ""))
    error.__dict__.update(state)
    return error


class ConfigError(NnragError, ValueError):
    """repos.json or an option is malformed: names the file, entry, key and what is allowed."""

    def __init__(
        self,
        message: str,
        *,
        file: Path | str | None = None,
        entry: str = "",
        key: str = "",
        line: int = 0,
        col: int = 0,
    ) -> None:
        where = str(file) if file else "<config>"
        if line:
            where += f":{line}:{col}"
        parts = [where]
        if entry:
            parts.append(entry)
        if key:
            parts.append(f"key {key!r}")
        super().__init__(f"{': '.join(parts)}: {message}")
        self.file = str(file) if file else None
        self.entry = entry
        self.key = key
        self.line = line
        self.col = col
        self.reason = message


class SourceError(NnragError, OSError):
    """A source could not be materialized (missing folder, failed clone, unknown distribution)."""

    def __init__(self, message: str, *, source: str, location: str = "") -> None:
        super().__init__(
            f"source {source!r}" + (f" ({location})" if location else "") + f": {message}"
        )
        self.source = source
        self.location = location
        self.reason = message


class CacheError(NnragError, OSError):
    """The cache folder cannot be used (not writable, held by another process too long)."""


class BlockNotFoundError(NnragError, LookupError):
    """A block id or bare class name matched nothing, or matched several blocks."""

    def __init__(self, query: str, *, candidates: Sequence[str] = ()) -> None:
        if candidates:
            listed = "\n  ".join(candidates)
            message = f"{query!r} is ambiguous; use one of these block ids:\n  {listed}"
        else:
            message = f"no block matches {query!r}; run `nnrag list` to see the discovered blocks"
        super().__init__(message)
        self.query = query
        self.candidates = tuple(candidates)


class ExtractionError(NnragError, RuntimeError):
    """A block could not be extracted at all (as opposed to extracted with problems)."""

    def __init__(self, message: str, *, block_id: str) -> None:
        super().__init__(f"{block_id}: {message}")
        self.block_id = block_id
        self.reason = message


class InternalError(NnragError, RuntimeError):
    """A bug in nnrag: its own output is broken. Says so and where the evidence was saved."""

    def __init__(self, message: str, *, evidence: Path | str | None = None) -> None:
        text = f"internal error in nnrag (please report it): {message}"
        if evidence:
            text += f"; the offending output was saved to {evidence}"
        super().__init__(text)
        self.evidence = str(evidence) if evidence else None
        self.reason = message


class SandboxError(NnragError, RuntimeError):
    """The sandbox itself could not run (not: a block failed inside it)."""


class ExecutorError(NnragError, RuntimeError):
    """An executor could not run blocks at all: its engine is missing or unreachable, or its
    workers could not start (not: a block failed, nor a worker died while running one)."""
