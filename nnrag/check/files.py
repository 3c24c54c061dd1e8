"""Checking many block files: reading, the check cache, forked processes for large runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from nnrag.check.cache import CheckCache
from nnrag.check.pieces import Compiled
from nnrag.check.static import check_text, position, pristine_findings
from nnrag.diagnostics import diagnostic, restore
from nnrag.model import Diagnostic

__all__ = ["check_file", "check_files"]


def check_file(
    path: Path,
    *,
    pristine: bool = False,
    definitions: Mapping[str, str] | None = None,
    cache: CheckCache | None = None,
) -> tuple[Diagnostic, ...]:
    """:func:`~nnrag.check.static.check_code` on a file; with ``pristine``, the digest check too.

    ``definitions`` (from the vendoring manifest) lets the digest check name what changed.
    ``cache`` returns the findings of content already checked (same findings, less time).
    Raises ``OSError`` if the file cannot be read.
    """
    manifest = {path: definitions} if definitions is not None else None
    (result,) = check_files([path], pristine=pristine, definitions=manifest, cache=cache)
    if isinstance(result, OSError):
        raise result
    return result


def check_files(
    paths: Sequence[Path],
    *,
    pristine: bool = False,
    definitions: Mapping[Path, Mapping[str, str]] | None = None,
    cache: CheckCache | None = None,
    workers: int = 1,
) -> list[tuple[Diagnostic, ...] | OSError]:
    """:func:`check_file` on each path, in order (an unreadable file gives its ``OSError``).

    The files not in ``cache`` are checked in up to ``workers`` forked processes, split by
    size, if there is enough text (parsing, compiling and the symbol tables hold the GIL, so
    threads would not help). Each process compiles the statements files share on its own:
    on a busy two-core machine one process was faster (the CLI's default, ``--jobs 1``).
    """
    results: list[tuple[Diagnostic, ...] | OSError] = []
    texts: dict[int, str] = {}
    keys: dict[int, str] = {}
    missing: dict[int, str] = {}
    for index, path in enumerate(paths):
        try:
            read = _read(path)
        except OSError as error:
            results.append(error)
            continue
        if isinstance(read, Diagnostic):
            results.append((read,))
            continue
        data, texts[index] = read
        keys[index] = cache.key(data) if cache is not None else ""
        cached = cache.get(keys[index]) if cache is not None else None
        results.append(cached if cached is not None else ())
        if cached is None:
            missing[index] = texts[index]
    for index, (findings, probes) in _check_texts(paths, missing, workers).items():
        results[index] = findings
        if cache is not None:
            cache.put(keys[index], findings, probes)
    for index, text in texts.items():
        found = results[index]
        if pristine and not isinstance(found, OSError):
            edited = pristine_findings(text, definitions=(definitions or {}).get(paths[index]))
            results[index] = tuple(sorted((*found, *edited), key=position))
    return [
        found if isinstance(found, OSError) else _at(found, str(path))
        for path, found in zip(paths, results, strict=True)
    ]


def _at(findings: tuple[Diagnostic, ...], path: str) -> tuple[Diagnostic, ...]:
    """The findings located in the file at ``path`` (cached ones were stored without it)."""
    return tuple(f if f.path == path else replace(f, path=path) for f in findings)


def _read(path: Path) -> tuple[bytes, str] | Diagnostic:
    """The bytes and text of a file (UTF-8, universal newlines, as ``read_text``), or NNR001."""
    data = path.read_bytes()
    try:
        return data, data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        try:  # the text layer's own error, whose position the finding reports
            return data, path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            message = f"not UTF-8 text: {error.reason} at byte {error.start}"
            return diagnostic("NNR001", path=str(path), line=1, col=1, error=message)


_PARALLEL_MIN_CHARS = 128 * 1024
"""Below this much text, one process checks faster than starting others (~30 ms/1,000 lines)."""

_Checked = tuple[tuple[Diagnostic, ...], dict[str, bool]]


def _check_texts(
    paths: Sequence[Path], texts: Mapping[int, str], workers: int
) -> dict[int, _Checked]:
    """``index -> (findings, installed lookups)`` of each text, in forked processes if it pays.

    Each process parses and compiles a top-level statement found in several files once, with
    its symbol table (vendored blocks of one source share their helpers).
    """
    compiled = Compiled()

    def check(indices: list[int]) -> dict[int, _Checked]:
        return {
            i: check_text(texts[i], filename=str(paths[i]), source_packages=None, compiled=compiled)
            for i in indices
        }

    jobs = sorted(texts, key=lambda index: -len(texts[index]))
    workers = min(workers, len(jobs))
    if (
        workers < 2
        or sum(map(len, texts.values())) < _PARALLEL_MIN_CHARS
        or not hasattr(os, "fork")
    ):
        return check(jobs)
    groups: list[list[int]] = [[] for _ in range(workers)]
    sizes = [0] * workers
    for index in jobs:  # largest first, to the least loaded process
        least = sizes.index(min(sizes))
        groups[least].append(index)
        sizes[least] += len(texts[index])
    children = [(_fork_check(check, group), group) for group in groups[1:]]
    results = check(groups[0])
    for (pid, pipe), group in children:
        done = _collect(pid, pipe)
        results.update(check(group) if done is None else done)  # None: the process failed
    return results


def _fork_check(
    check: Callable[[list[int]], dict[int, _Checked]], group: list[int]
) -> tuple[int, int]:
    """``check(group)`` in a forked process; (its pid, the pipe its results come on)."""
    import marshal

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        return pid, read_end
    status = 1
    try:
        os.close(read_end)
        done = {
            index: ([(f.code, f.message, f.path, f.line, f.col) for f in findings], probes)
            for index, (findings, probes) in check(group).items()
        }
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(marshal.dumps(done))
        status = 0
    finally:
        os._exit(status)  # never return into the caller's code in the child


def _collect(pid: int, pipe: int) -> dict[int, _Checked] | None:
    """The results a forked process sent, or None if it failed."""
    import marshal

    with os.fdopen(pipe, "rb") as stream:
        payload = stream.read()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    try:
        done = marshal.loads(payload)
        return {
            int(index): (
                tuple(
                    restore(code, message, path=path, line=line, col=col)
                    for code, message, path, line, col in found
                ),
                dict(probes),
            )
            for index, (found, probes) in done.items()
        }
    except (EOFError, ValueError, TypeError, KeyError):
        return None
