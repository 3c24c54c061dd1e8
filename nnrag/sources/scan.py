"""The in-scope Python files of a tree: walking, scoping by ``paths``, content digests."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nnrag.diagnostics import diagnostic
from nnrag.model import Diagnostic

MAX_FILE_BYTES = 2 * 1024 * 1024
"""Files larger than this are recorded as a problem (generated code) and not indexed."""

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", ".git", ".hg", ".svn"})
_GLOB_CHARS = frozenset("*?[")


def git_blob_sha1(data: bytes) -> str:
    """Git's blob hash of ``data`` (a file's SWHID is ``swh:1:cnt:<this>``)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class FileEntry:
    """One in-scope ``.py`` file of a source tree."""

    path: str
    """POSIX path relative to the tree root."""
    location: str
    """The file's full path (a string: building Paths for every file slows warm runs)."""
    size: int
    mtime_ns: int

    @property
    def file(self) -> Path:
        return Path(self.location)


def in_scope(path: str, patterns: Sequence[str]) -> bool:
    """Whether relative POSIX ``path`` is selected by ``patterns`` (globs or folder prefixes).

    No patterns select everything. A prefix selects itself and everything below it (a module
    named without ``.py``, ``torch/nn/functional``, selects that file); a glob selects a file
    it matches or any file below a folder it matches.
    """
    if not patterns:
        return True
    for raw in patterns:
        pattern = normalized_pattern(raw)
        if not pattern or pattern == ".":
            return True
        if _GLOB_CHARS.isdisjoint(pattern):
            if path in (pattern, pattern + ".py") or path.startswith(pattern + "/"):
                return True
            continue
        if fnmatch.fnmatchcase(path, pattern):
            return True
        parts = path.split("/")
        for end in range(1, len(parts)):
            if fnmatch.fnmatchcase("/".join(parts[:end]), pattern):
                return True
    return False


def normalized_pattern(pattern: str) -> str:
    """``./timm/`` -> ``timm``; backslashes as slashes."""
    text = pattern.replace("\\", "/").strip()
    while text.startswith("./"):
        text = text[2:]
    return text.strip("/")


def walk_roots(patterns: Sequence[str]) -> list[str]:
    """Top folders to walk: the literal part of every pattern (``""`` for the whole tree)."""
    if not patterns:
        return [""]
    roots: set[str] = set()
    for raw in patterns:
        literal: list[str] = []
        for part in normalized_pattern(raw).split("/"):
            if not part or part == "." or not _GLOB_CHARS.isdisjoint(part):
                break
            literal.append(part)
        roots.add("/".join(literal))
    ordered = sorted(roots, key=lambda r: (r.count("/"), r))
    kept: list[str] = []
    for root in ordered:
        if not any(k in (root, "") or root.startswith(k + "/") for k in kept):
            kept.append(root)
    return kept


def scan_tree(
    root: Path, *, source: str, paths: Sequence[str] = ()
) -> tuple[list[FileEntry], list[Diagnostic]]:
    """Every in-scope ``.py`` file under ``root`` (sorted by path), and the files that were skipped.

    Symbolic links are followed, but a folder reached twice through links (a loop) is skipped
    with a problem; files over :data:`MAX_FILE_BYTES` are skipped with a problem.
    """
    entries: dict[str, FileEntry] = {}
    problems: list[Diagnostic] = []
    for literal in walk_roots(paths):
        start, top = literal, root / literal if literal else root
        if literal and not top.exists() and top.with_name(top.name + ".py").is_file():
            start, top = literal + ".py", top.with_name(top.name + ".py")  # a module without .py
        if top.is_file():
            _add_file(root, start, entries, problems, source=source, patterns=paths)
        elif top.is_dir():
            _walk(root, start, entries, problems, source=source, patterns=paths, seen=set())
    if paths:
        _add_package_inits(root, entries, problems, source=source)
    for pattern in paths:
        if entries and not any(in_scope(path, [pattern]) for path in entries):
            problems.append(
                diagnostic(
                    "NNR406",
                    source=source,
                    path=pattern,
                )
            )
    return [entries[key] for key in sorted(entries)], sorted(
        problems, key=lambda p: (p.path, p.message)
    )


def _add_package_inits(
    root: Path, entries: dict[str, FileEntry], problems: list[Diagnostic], *, source: str
) -> None:
    """Add the ``__init__.py`` of every package above an in-scope file (``paths: ["a/b"]``
    still makes ``a/__init__.py`` part of the source: it names and re-exports the package)."""
    checked: set[str] = set()
    for rel in list(entries):
        parts = rel.split("/")[:-1]
        for end in range(1, len(parts) + 1):
            folder = "/".join(parts[:end])
            if folder in checked:
                continue
            checked.add(folder)
            init = f"{folder}/__init__.py"
            if init not in entries and (root / init).is_file():
                _add_file(root, init, entries, problems, source=source, patterns=())


def _walk(
    root: Path,
    rel: str,
    entries: dict[str, FileEntry],
    problems: list[Diagnostic],
    *,
    source: str,
    patterns: Sequence[str],
    seen: set[tuple[int, int]],
) -> None:
    folder = root / rel if rel else root
    try:
        info = folder.stat()
    except OSError as error:
        problems.append(_os_problem(error, source=source, path=rel or "."))
        return
    key = (info.st_dev, info.st_ino)
    if key in seen:
        problems.append(
            diagnostic(
                "NNR407",
                source=source,
                path=rel,
                detail=f"{rel} leads back to a folder already being indexed; "
                "skipped (remove the link or exclude it with `paths`)",
            )
        )
        return
    seen = seen | {key}
    try:
        with os.scandir(folder) as listing:
            children = sorted(listing, key=lambda e: e.name)
    except OSError as error:
        problems.append(_os_problem(error, source=source, path=rel or "."))
        return
    for child in children:
        child_rel = f"{rel}/{child.name}" if rel else child.name
        if child.name.startswith(".") or child.name in _SKIP_DIRS:
            continue
        try:
            is_dir = child.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            _walk(root, child_rel, entries, problems, source=source, patterns=patterns, seen=seen)
        elif child.name.endswith(".py"):
            _add_file(
                root, child_rel, entries, problems, source=source, patterns=patterns, entry=child
            )


def _add_file(
    root: Path,
    rel: str,
    entries: dict[str, FileEntry],
    problems: list[Diagnostic],
    *,
    source: str,
    patterns: Sequence[str],
    entry: os.DirEntry[str] | None = None,
) -> None:
    if rel in entries or not rel.endswith(".py") or not in_scope(rel, patterns):
        return
    try:
        info = entry.stat() if entry is not None else (root / rel).stat()
    except OSError as error:
        problems.append(_os_problem(error, source=source, path=rel))
        return
    if not stat.S_ISREG(info.st_mode):
        return
    if info.st_size > MAX_FILE_BYTES:
        problems.append(
            diagnostic(
                "NNR405",
                source=source,
                path=rel,
                megabytes=info.st_size / 1e6,
                limit=MAX_FILE_BYTES / 1e6,
            )
        )
        return
    location = entry.path if entry is not None else str(root / rel)
    entries[rel] = FileEntry(
        path=rel, location=location, size=info.st_size, mtime_ns=info.st_mtime_ns
    )


def _os_problem(error: OSError, *, source: str, path: str) -> Diagnostic:
    if error.errno == 40:  # ELOOP: a symlink that points (through links) at itself
        detail = "the link points back at itself; skipped"
        return diagnostic("NNR407", source=source, path=path, detail=detail)
    return diagnostic("NNR401", source=source, path=path, error=error.strerror or error)


def tree_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """Content hash of a tree: sha1 over sorted ``path``/blob-sha1 pairs."""
    digest = hashlib.sha1(usedforsecurity=False)
    for path, sha1 in sorted(pairs):
        digest.update(f"{path}\0{sha1}\n".encode())
    return digest.hexdigest()
