"""Sources on disk: the in-scope Python files of a tree; materializing path, git, pypi sources."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnrag.errors import SourceError
from nnrag.model import Checkout, FileProblem, SourceSpec

MAX_FILE_BYTES = 2 * 1024 * 1024
"""Files larger than this are recorded as a problem (generated code) and not indexed."""

_SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", ".git", ".hg", ".svn"})
_GLOB_CHARS = frozenset("*?[")


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

    No patterns select everything. A prefix selects itself and everything below it; a glob
    selects a file it matches or any file below a folder it matches.
    """
    if not patterns:
        return True
    for raw in patterns:
        pattern = _normalized(raw)
        if not pattern or pattern == ".":
            return True
        if _GLOB_CHARS.isdisjoint(pattern):
            if path == pattern or path.startswith(pattern + "/"):
                return True
            continue
        if fnmatch.fnmatchcase(path, pattern):
            return True
        parts = path.split("/")
        for end in range(1, len(parts)):
            if fnmatch.fnmatchcase("/".join(parts[:end]), pattern):
                return True
    return False


def _normalized(pattern: str) -> str:
    """``./timm/`` -> ``timm``; backslashes as slashes."""
    text = pattern.replace("\\", "/").strip()
    while text.startswith("./"):
        text = text[2:]
    return text.strip("/")


def _walk_roots(patterns: Sequence[str]) -> list[str]:
    """Top folders to walk: the literal part of every pattern (``""`` for the whole tree)."""
    if not patterns:
        return [""]
    roots: set[str] = set()
    for raw in patterns:
        literal: list[str] = []
        for part in _normalized(raw).split("/"):
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
) -> tuple[list[FileEntry], list[FileProblem]]:
    """Every in-scope ``.py`` file under ``root`` (sorted by path), and the files that were skipped.

    Symbolic links are followed, but a folder reached twice through links (a loop) is skipped
    with a problem; files over :data:`MAX_FILE_BYTES` are skipped with a problem.
    """
    entries: dict[str, FileEntry] = {}
    problems: list[FileProblem] = []
    for start in _walk_roots(paths):
        top = root / start if start else root
        if top.is_file():
            _add_file(root, start, entries, problems, source=source, patterns=paths)
        elif top.is_dir():
            _walk(root, start, entries, problems, source=source, patterns=paths, seen=set())
    if paths:
        _add_package_inits(root, entries, problems, source=source)
    for pattern in paths:
        if entries and not any(in_scope(path, [pattern]) for path in entries):
            problems.append(
                FileProblem(
                    source=source,
                    path=pattern,
                    message="this 'paths' entry matches no .py file; check it (a folder or "
                    "file prefix, or a glob, relative to the source root)",
                )
            )
    return [entries[key] for key in sorted(entries)], sorted(
        problems, key=lambda p: (p.path, p.message)
    )


def _add_package_inits(
    root: Path, entries: dict[str, FileEntry], problems: list[FileProblem], *, source: str
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
    problems: list[FileProblem],
    *,
    source: str,
    patterns: Sequence[str],
    seen: set[tuple[int, int]],
) -> None:
    folder = root / rel if rel else root
    try:
        info = folder.stat()
    except OSError as error:
        problems.append(FileProblem(source=source, path=rel or ".", message=_os_message(error)))
        return
    key = (info.st_dev, info.st_ino)
    if key in seen:
        problems.append(
            FileProblem(
                source=source,
                path=rel,
                message=f"symlink loop: {rel} leads back to a folder already being indexed; "
                "skipped (remove the link or exclude it with `paths`)",
            )
        )
        return
    seen = seen | {key}
    try:
        with os.scandir(folder) as listing:
            children = sorted(listing, key=lambda e: e.name)
    except OSError as error:
        problems.append(FileProblem(source=source, path=rel or ".", message=_os_message(error)))
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
    problems: list[FileProblem],
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
        problems.append(FileProblem(source=source, path=rel, message=_os_message(error)))
        return
    if not stat.S_ISREG(info.st_mode):
        return
    if info.st_size > MAX_FILE_BYTES:
        problems.append(
            FileProblem(
                source=source,
                path=rel,
                message=f"too large ({info.st_size / 1e6:.1f} MB > "
                f"{MAX_FILE_BYTES / 1e6:.1f} MB), generated? skipped",
            )
        )
        return
    location = entry.path if entry is not None else str(root / rel)
    entries[rel] = FileEntry(
        path=rel, location=location, size=info.st_size, mtime_ns=info.st_mtime_ns
    )


def _os_message(error: OSError) -> str:
    if error.errno == 40:  # ELOOP: a symlink that points (through links) at itself
        return "symlink loop: the link points back at itself; skipped"
    return f"cannot read: {error.strerror or error}"


def tree_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """Content hash of a tree: sha1 over sorted ``path``/blob-sha1 pairs."""
    digest = hashlib.sha1(usedforsecurity=False)
    for path, sha1 in sorted(pairs):
        digest.update(f"{path}\0{sha1}\n".encode())
    return digest.hexdigest()


def iter_py_files(root: Path) -> Iterator[Path]:
    """Every ``.py`` file under ``root`` (for tests and benchmarks), sorted."""
    entries, _ = scan_tree(root, source="")
    for entry in entries:
        yield entry.file


# --------------------------------------------------------------------------- materializing

MARKER = ".nnrag-checkout.json"
"""Written last into a finished checkout, before it is renamed into place."""


def materialize(
    spec: SourceSpec,
    cache_dir: Path,
    *,
    known: Mapping[str, tuple[int, int, str]] | None = None,
    scanned: Sequence[FileEntry] | None = None,
) -> Checkout:
    """Bring ``spec``'s code onto disk (cloning or downloading into ``cache_dir``) and describe it.

    For a path source, ``known`` maps relative paths to ``(size, mtime_ns, sha1)`` from the
    last run, so unchanged files are not re-read to compute the revision, and ``scanned`` is
    :func:`scan_tree`'s result for its folder when the caller already has it.
    """
    if spec.kind == "path":
        return _path_checkout(spec, known or {}, scanned)
    if spec.kind == "git":
        return _git_checkout(spec, cache_dir)
    return _pypi_checkout(spec, cache_dir)


def file_sha1s(
    entries: Sequence[FileEntry], known: Mapping[str, tuple[int, int, str]]
) -> dict[str, str]:
    """Blob SHA-1 of every entry, re-reading only files whose size or mtime changed."""
    from nnrag.units import git_blob_sha1

    result: dict[str, str] = {}
    for entry in entries:
        memo = known.get(entry.path)
        if memo is not None and memo[:2] == (entry.size, entry.mtime_ns):
            result[entry.path] = memo[2]
        else:
            result[entry.path] = git_blob_sha1(entry.file.read_bytes())
    return result


def _path_checkout(
    spec: SourceSpec,
    known: Mapping[str, tuple[int, int, str]],
    scanned: Sequence[FileEntry] | None,
) -> Checkout:
    root = Path(spec.location)
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise SourceError(
            f"folder {what}; fix 'path' in {spec.config_file or 'repos.json'} ({spec.entry})",
            source=spec.name,
            location=str(root),
        )
    entries = scan_tree(root, source=spec.name, paths=spec.paths)[0] if scanned is None else scanned
    _require_files(spec, root, entries)
    return Checkout(
        spec=spec,
        root=root,
        revision=tree_digest(file_sha1s(entries, known).items()),
        origin=str(root),
        license=license_of(root),
    )


def _require_files(spec: SourceSpec, root: Path, entries: Sequence[FileEntry]) -> None:
    if entries:
        return
    scope = f" under paths {list(spec.paths)}" if spec.paths else ""
    raise SourceError(
        f"no .py files{scope} in {root}; check 'paths' (or the source) in "
        f"{spec.config_file or 'repos.json'} ({spec.entry})",
        source=spec.name,
        location=spec.location,
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60] or "source"


def _key(*parts: object) -> str:
    return hashlib.sha1(json.dumps(parts).encode(), usedforsecurity=False).hexdigest()[:16]


def _publish(building: Path, final: Path, meta: Mapping[str, object]) -> None:
    """Write the marker last, then rename the finished folder into place atomically."""
    (building / MARKER).write_text(json.dumps(meta), encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    os.replace(building, final)


def _finished(folder: Path) -> dict[str, Any] | None:
    try:
        meta: dict[str, Any] = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta


def _clear_partial(parent: Path) -> None:
    """Remove folders left by a killed process (only called under the parent's lock)."""
    for leftover in parent.glob(".tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def _locked(parent: Path) -> Any:
    import filelock

    parent.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(parent / ".lock"), timeout=1800)


def _tail(text: str, lines: int = 4) -> str:
    """The last lines of a tool's output (its error lines, where it marks them)."""
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in kept if line.lower().startswith(("error", "fatal"))]
    kept = (errors or kept)[-lines:]
    return " | ".join(kept) or "(no output)"


# --------------------------------------------------------------------------- git


_HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")


def _git(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", LC_ALL="C")
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _remote_commit(spec: SourceSpec) -> str | None:
    """The commit ``spec.ref`` (default: HEAD) names on the remote, or ``None`` if unreachable."""
    ref = spec.ref or "HEAD"
    done = _git("ls-remote", spec.location, ref, timeout=120)
    if done.returncode != 0:
        return None
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        sha, _, name = line.partition("\t")
        found[name] = sha
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in found:
            return found[name]
    if found:
        return next(iter(found.values()))
    if _HEX.match(ref) and len(ref) == 40:
        return ref.lower()
    return ""


def _git_checkout(spec: SourceSpec, cache_dir: Path) -> Checkout:
    parent = (
        cache_dir / "checkouts" / "git" / f"{_slug(spec.name)}-{_key(spec.location, spec.paths)}"
    )
    with _locked(parent):
        _clear_partial(parent)
        commit = _remote_commit(spec)
        if commit == "":
            raise SourceError(
                f"ref {spec.ref!r} is not a branch, tag or full 40-hex commit of the repository; "
                f"fix 'ref' in {spec.config_file or 'repos.json'} ({spec.entry})",
                source=spec.name,
                location=spec.location,
            )
        finished = [
            (folder, meta)
            for folder in sorted(parent.iterdir())
            if folder.is_dir()
            and (meta := _finished(folder)) is not None
            and meta.get("ref") == spec.ref
        ]
        for folder, meta in finished:
            if commit is None or str(meta["revision"]).startswith(commit.lower()):
                return _checkout_from(spec, folder, meta)
        if commit is None:
            done = _git("ls-remote", spec.location, "HEAD", timeout=120)
            raise SourceError(
                f"cannot reach the repository: {_tail(done.stderr)}; check the URL and network",
                source=spec.name,
                location=spec.location,
            )
        building = Path(tempfile.mkdtemp(prefix=".tmp-", dir=parent))
        try:
            meta = _clone(spec, building / "tree", commit)
            final = parent / meta["revision"]
            _publish(building, final, meta)
        finally:
            shutil.rmtree(building, ignore_errors=True)
        for folder, _ in finished:
            if folder != final:
                shutil.rmtree(folder, ignore_errors=True)
        return _checkout_from(spec, final, meta)


def _clone(spec: SourceSpec, work: Path, commit: str) -> dict[str, Any]:
    def run(*args: str, cwd: Path | None = work) -> None:
        done = _git(*args, cwd=cwd)
        if done.returncode != 0:
            raise SourceError(
                f"`git {args[0]}` failed: {_tail(done.stderr)}",
                source=spec.name,
                location=spec.location,
            )

    by_commit = (
        spec.ref is not None and _HEX.match(spec.ref) and commit.startswith(spec.ref.lower())
    )
    clone = ["clone", "--quiet", "--depth", "1", "--filter=blob:none", "--no-checkout"]
    if spec.ref and not by_commit:
        clone += ["--branch", spec.ref]
    run(*clone, spec.location, str(work), cwd=None)
    if by_commit:
        run("fetch", "--quiet", "--depth", "1", "origin", commit)
    if spec.paths:
        patterns = ["/LICENSE*", "/LICENCE*", "/COPYING*"]
        patterns += ["/" + _normalized(p) for p in spec.paths]
        patterns += [f"/{folder}/__init__.py" for folder in _ancestors(spec.paths)]
        run("sparse-checkout", "set", "--no-cone", *patterns)
    run("checkout", "--quiet", "--detach", commit if by_commit else "HEAD")
    head = _git("rev-parse", "HEAD", cwd=work).stdout.strip()
    shutil.rmtree(work / ".git", ignore_errors=True)
    entries, _ = scan_tree(work, source=spec.name, paths=spec.paths)
    _require_files(spec, work, entries)
    return {
        "ref": spec.ref,
        "revision": head,
        "origin": spec.location,
        "license": license_of(work),
        "root": "tree",
    }


def _ancestors(paths: Sequence[str]) -> list[str]:
    """Folders above each path's literal prefix (their ``__init__.py`` files are needed)."""
    found: set[str] = set()
    for root in _walk_roots(paths):
        parts = root.split("/") if root else []
        found.update("/".join(parts[:end]) for end in range(1, len(parts)))
    return sorted(found)


def _checkout_from(spec: SourceSpec, folder: Path, meta: Mapping[str, Any]) -> Checkout:
    return Checkout(
        spec=spec,
        root=folder / str(meta["root"]),
        revision=str(meta["revision"]),
        origin=str(meta["origin"]),
        license=meta.get("license"),
    )


# --------------------------------------------------------------------------- pypi


def _pypi_checkout(spec: SourceSpec, cache_dir: Path) -> Checkout:
    final = (
        cache_dir
        / "checkouts"
        / "pypi"
        / f"{_slug(spec.location)}-{_key(spec.location, spec.paths)}"
    )
    parent = final.parent
    with _locked(parent):
        meta = _finished(final)
        if meta is not None:
            return _checkout_from(spec, final, meta)
        _clear_partial(parent)
        building = Path(tempfile.mkdtemp(prefix=".tmp-", dir=parent))
        try:
            return _build_pypi(spec, building, final)
        finally:
            shutil.rmtree(building, ignore_errors=True)


def _build_pypi(spec: SourceSpec, building: Path, final: Path) -> Checkout:
    archive = _download(spec, building / "download")
    root_name = _unpack(archive, building / "tree")
    tree = building / "tree"
    root = tree / root_name
    version = _version_of(archive, tree)
    entries, _ = scan_tree(root, source=spec.name, paths=spec.paths)
    _require_files(spec, root, entries)
    shutil.rmtree(building / "download", ignore_errors=True)
    meta = {
        "revision": version,
        "origin": spec.location,
        "license": license_of(tree),
        "root": f"tree/{root_name}".rstrip("/"),
        "archive": archive.name,
    }
    _publish(building, final, meta)
    return _checkout_from(spec, final, meta)


def _download(spec: SourceSpec, folder: Path) -> Path:
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(folder)]
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    attempts = (
        ["--only-binary=:all:"],
        ["--no-binary=:all:"],
        ["--no-binary=:all:", "--no-build-isolation"],
    )
    errors = ""
    for extra in attempts:
        done = subprocess.run(
            [*base, *extra, spec.location],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        files = sorted(p for p in folder.glob("*") if p.is_file()) if folder.exists() else []
        if done.returncode == 0 and files:
            return files[0]
        errors = done.stderr or done.stdout
    if "No matching distribution" in errors or "Could not find a version" in errors:
        reason = "no distribution matches the requirement on the package index"
        hint = "check the name and version (`pip index versions NAME`)"
    else:
        reason = "pip could not download it"
        hint = "check the requirement and your network or pip configuration"
    raise SourceError(
        f"{reason}: {_tail(errors, 2)}; {hint}", source=spec.name, location=spec.location
    )


def _keep(member: str) -> bool:
    name = member.rsplit("/", 1)[-1]
    return (
        member.endswith(".py")
        or name in {"METADATA", "PKG-INFO"}
        or bool(re.match(r"(LICEN[CS]E|COPYING|NOTICE)", name, re.IGNORECASE))
    )


def _unpack(archive: Path, into: Path) -> str:
    """Extract Python sources and license/metadata files; return the import root (relative)."""
    import tarfile
    import zipfile

    into.mkdir(parents=True)
    names: list[str] = []
    if archive.suffix in {".whl", ".zip"}:
        with zipfile.ZipFile(archive) as zipped:
            for member in zipped.infolist():
                if member.is_dir() or not _keep(member.filename) or not _safe(member.filename):
                    continue
                zipped.extract(member, into)
                names.append(member.filename)
    else:
        with tarfile.open(archive) as tarred:
            members = [
                m for m in tarred.getmembers() if m.isfile() and _keep(m.name) and _safe(m.name)
            ]
            tarred.extractall(into, members=members, filter="data")
            names = [m.name for m in members]
    if archive.suffix == ".whl":
        return ""
    tops = {n.split("/", 1)[0] for n in names if "/" in n}
    top = tops.pop() if len(tops) == 1 else ""
    base = into / top
    if (base / "src").is_dir() and not any(
        (child / "__init__.py").is_file() for child in base.iterdir() if child.is_dir()
    ):
        return f"{top}/src".strip("/")
    return top


def _safe(name: str) -> bool:
    parts = Path(name).parts
    return not Path(name).is_absolute() and ".." not in parts


def _version_of(archive: Path, tree: Path) -> str:
    for meta in (*tree.glob("*.dist-info/METADATA"), *tree.glob("*/PKG-INFO")):
        for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    match = re.match(r"[^-]+-([^-]+?)(?:\.tar\.gz|\.zip|-)", archive.name)
    return match.group(1) if match else "unknown"


# --------------------------------------------------------------------------- licenses

_CLASSIFIERS = {
    "MIT License": "MIT",
    "Apache Software License": "Apache-2.0",
    "BSD License": "BSD-3-Clause",
    "GNU General Public License v3 (GPLv3)": "GPL-3.0-only",
    "GNU General Public License v2 (GPLv2)": "GPL-2.0-only",
    "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "ISC License (ISCL)": "ISC",
}
_TEXTS = (
    ("Apache-2.0", ("apache license", "version 2.0")),
    ("MIT", ("permission is hereby granted, free of charge",)),
    ("BSD-3-Clause", ("redistribution and use", "neither the name")),
    ("BSD-2-Clause", ("redistribution and use", "this list of conditions")),
    ("GPL-3.0-only", ("gnu general public license", "version 3")),
    ("GPL-2.0-only", ("gnu general public license", "version 2")),
    ("LGPL-3.0-only", ("gnu lesser general public license", "version 3")),
    ("MPL-2.0", ("mozilla public license", "2.0")),
    ("Unlicense", ("this is free and unencumbered software",)),
    ("ISC", ("permission to use, copy, modify, and/or distribute",)),
)


_ALIASES = {"MIT License": "MIT", "Apache 2.0": "Apache-2.0", "Apache License 2.0": "Apache-2.0"}
_VAGUE = frozenset({"BSD", "GPL", "LGPL", "UNKNOWN", "OTHER"})
_SPDX_LIKE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]*(?: (?:AND|OR|WITH) [A-Za-z0-9.+-]+)*")


def license_of(tree: Path) -> str | None:
    """SPDX id of a tree's code, where found.

    In order: ``License-Expression``; a ``License`` field that is an SPDX id; a LICENSE file's
    text; a license classifier. A vague ``License: BSD`` alone gives no answer.
    """
    metas = [*tree.glob("*.dist-info/METADATA"), *tree.glob("*/PKG-INFO"), tree / "PKG-INFO"]
    fields = [
        _metadata_fields(meta.read_text(encoding="utf-8", errors="replace"))
        for meta in metas
        if meta.is_file()
    ]
    for values in fields:
        for expression in values.get("license-expression", []):
            if expression:
                return expression
    for values in fields:
        for value in values.get("license", []):
            if value in _ALIASES:
                return _ALIASES[value]
            if _SPDX_LIKE.fullmatch(value) and value.upper() not in _VAGUE:
                return value
    for folder in (tree, *sorted(tree.glob("*.dist-info")), *sorted(tree.glob("*/"))):
        for candidate in sorted(folder.glob("*")):
            if candidate.is_file() and re.match(r"(LICEN[CS]E|COPYING)", candidate.name, re.I):
                found = license_from_text(candidate.read_text(encoding="utf-8", errors="replace"))
                if found:
                    return found
    for values in fields:
        for classifier in values.get("classifier", []):
            name = classifier.rsplit("::", 1)[-1].strip()
            if classifier.startswith("License ::") and name in _CLASSIFIERS:
                return _CLASSIFIERS[name]
    return None


def _metadata_fields(text: str) -> dict[str, list[str]]:
    """Header fields of a METADATA / PKG-INFO file, by lower-cased name."""
    values: dict[str, list[str]] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        values.setdefault(key.strip().lower(), []).append(value.strip())
    return values


def license_from_text(text: str) -> str | None:
    """SPDX id of a license text, by its distinctive phrases."""
    lowered = " ".join(text.lower().split())
    for spdx, phrases in _TEXTS:
        if all(phrase in lowered for phrase in phrases):
            return spdx
    return None
