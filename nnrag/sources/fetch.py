"""Sources on disk: materializing path, git and pypi sources into the cache, atomically."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nnrag.errors import SourceError
from nnrag.model import Checkout, SourceSpec
from nnrag.sources.licenses import license_of
from nnrag.sources.scan import FileEntry, scan_tree, tree_digest

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
    from nnrag.sources.scan import git_blob_sha1

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


_SPARSE = ("*.py", "/LICENSE*", "/LICENCE*", "/COPYING*")
"""What a git checkout holds: every Python file, not only those under ``paths`` (a block's
closure reaches any module of its source), and the licence; no data, weights or docs."""


def _remote_commit(spec: SourceSpec) -> tuple[str | None, bool]:
    """The commit ``spec.ref`` (default: HEAD) names on the remote (``None`` if unreachable,
    ``""`` if no ref of that name exists), and whether the ref is a branch or tag name, the
    only refs ``git clone --branch`` takes (not ``HEAD``, ``refs/pull/1/head`` or a commit)."""
    ref = spec.ref or "HEAD"
    done = _git("ls-remote", spec.location, ref, timeout=120)
    if done.returncode != 0:
        return None, False
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        sha, _, name = line.partition("\t")
        found[name] = sha
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}"):
        if name in found:
            return found[name], True
    if ref in found:
        return found[ref], False
    if found:
        return next(iter(found.values())), False
    if _HEX.match(ref) and len(ref) == 40:
        return ref.lower(), False
    return "", False


def _git_checkout(spec: SourceSpec, cache_dir: Path) -> Checkout:
    parent = (
        cache_dir / "checkouts" / "git" / f"{_slug(spec.name)}-{_key(spec.location, spec.paths)}"
    )
    with _locked(parent):
        _clear_partial(parent)
        commit, by_name = _remote_commit(spec)
        if commit == "":
            raise SourceError(
                f"ref {spec.ref!r} names no branch, tag or other ref of the repository and "
                "is no full 40-hex commit; "
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
            and meta.get("files") == list(_SPARSE)
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
            meta = _clone(spec, building / "tree", commit, by_name=by_name)
            final = parent / meta["revision"]
            _publish(building, final, meta)
        finally:
            shutil.rmtree(building, ignore_errors=True)
        for folder, _ in finished:
            if folder != final:
                shutil.rmtree(folder, ignore_errors=True)
        return _checkout_from(spec, final, meta)


def _clone(spec: SourceSpec, work: Path, commit: str, *, by_name: bool) -> dict[str, Any]:
    """Check ``commit`` out into ``work``: a branch or tag by name (``by_name``), any other
    ref (a commit, ``HEAD``, ``refs/pull/1/head``) by fetching the commit it names."""

    def run(*args: str, cwd: Path | None = work) -> None:
        done = _git(*args, cwd=cwd)
        if done.returncode != 0:
            raise SourceError(
                f"`git {args[0]}` failed: {_tail(done.stderr)}",
                source=spec.name,
                location=spec.location,
            )

    by_commit = spec.ref is not None and not by_name
    clone = ["clone", "--quiet", "--depth", "1", "--filter=blob:none", "--no-checkout"]
    if spec.ref and by_name:
        clone += ["--branch", spec.ref]
    run(*clone, spec.location, str(work), cwd=None)
    if by_commit:
        run("fetch", "--quiet", "--depth", "1", "origin", commit)
    run("sparse-checkout", "set", "--no-cone", *_SPARSE)
    run("checkout", "--quiet", "--detach", commit if by_commit else "HEAD")
    head = _git("rev-parse", "HEAD", cwd=work).stdout.strip()
    shutil.rmtree(work / ".git", ignore_errors=True)
    entries, _ = scan_tree(work, source=spec.name, paths=spec.paths)
    _require_files(spec, work, entries)
    return {
        "ref": spec.ref,
        "files": _SPARSE,
        "revision": head,
        "origin": spec.location,
        "license": license_of(work),
        "root": "tree",
    }


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
    source_only = f"--no-binary={_project(spec.location)}"
    attempts = (  # a wheel, else the sdist: only it from source, its build requirements as wheels
        ["--only-binary=:all:"],
        [source_only],
        [source_only, "--no-build-isolation"],
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


def _project(requirement: str) -> str:
    """The project a requirement names (``fairseq`` of ``fairseq==0.12.2``), ``:all:`` when it
    is not a plain requirement (a URL or a path)."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(requirement).name
    except InvalidRequirement:
        return ":all:"


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


def tree_version(tree: Path) -> str | None:
    """The version an unpacked distribution declares (``*.dist-info/METADATA`` or
    ``PKG-INFO``), ``None`` if it declares none."""
    for meta in (*tree.glob("*.dist-info/METADATA"), *tree.glob("*/PKG-INFO")):
        try:
            text = meta.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return None


def _version_of(archive: Path, tree: Path) -> str:
    version = tree_version(tree)
    if version is not None:
        return version
    match = re.match(r"[^-]+-([^-]+?)(?:\.tar\.gz|\.zip|-)", archive.name)
    return match.group(1) if match else "unknown"
