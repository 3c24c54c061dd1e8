"""``nnrag vendor --rewrite-imports``: point a project's imports at its vendored blocks."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nnrag.errors import ConfigError, NnragError

if TYPE_CHECKING:
    from nnrag.vendor import ManifestEntry
    from nnrag.vendoring.codemods import Target

__all__ = ["Rewritten", "find_manifest", "package_name", "rewrite_imports", "targets_of"]

_SKIP_DIRS = frozenset({".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".tox"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Rewritten:
    """What the codemod did (or would do, with ``--check``) to one file."""

    path: Path
    changes: tuple[str, ...] = ()
    diff: str = ""
    error: str = ""
    """Why the file was left alone (it does not parse, cannot be read)."""


def find_manifest(root: Path) -> Path:
    """The one folder under ``root`` holding an ``nnrag-blocks.json`` (else a clear error)."""
    from nnrag.vendor import MANIFEST

    found = sorted(path.parent for path in _walk(root, MANIFEST))
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(
            f"no {MANIFEST} under {root}: vendor blocks first (`nnrag extract ID --into DIR`) "
            "or pass --blocks DIR"
        )
    listed = ", ".join(str(path) for path in found)
    raise ConfigError(f"several vendored folders ({listed}); pick one with --blocks DIR")


def package_name(folder: Path, root: Path) -> str:
    """The import name of ``folder`` for code run from ``root`` (``vendor/blocks`` ->
    ``vendor.blocks``)."""
    try:
        relative = folder.resolve().relative_to(root.resolve())
    except ValueError:
        raise ConfigError(
            f"{folder} is not under {root}; name its import path with --module NAME"
        ) from None
    parts = relative.parts
    if not parts or not all(part.isidentifier() for part in parts):
        raise ConfigError(
            f"{relative} is not an importable package path; name it with --module NAME"
        )
    return ".".join(parts)


def targets_of(
    entries: list[ManifestEntry],
    module: str,
    *,
    lookup: Callable[[ManifestEntry, str], tuple[str, str] | None] | None = None,
) -> Callable[[str], Target | None]:
    """What a qualified name denotes among the vendored blocks, as a codemod ``target``.

    ``timm.layers.mlp.Mlp`` (where the block was defined) always matches; with ``lookup``
    (``(entry, qualified name) -> (module, name)`` of the definition it denotes in the
    indexed source), so do re-exports such as ``timm.layers.Mlp``.
    """
    from nnrag.vendoring.codemods import Target

    vendored: dict[tuple[str, str], Target] = {}
    tops: dict[str, list[ManifestEntry]] = {}
    for entry in entries:
        _, defined_in, name = entry.id.split(":")
        vendored[defined_in, name] = Target(module=f"{module}.{Path(entry.file).stem}", name=name)
        tops.setdefault(defined_in.split(".", 1)[0], []).append(entry)
    memo: dict[str, Target | None] = {}

    def denotes(qualified: str) -> Target | None:
        if qualified not in memo:
            where, _, name = qualified.rpartition(".")
            found = vendored.get((where, name))
            if found is None and lookup is not None:
                for entry in tops.get(qualified.split(".", 1)[0], ()):
                    denoted = lookup(entry, qualified)
                    if denoted is not None and denoted in vendored:
                        found = vendored[denoted]
                        break
            memo[qualified] = found
        return memo[qualified]

    return denotes


def rewrite_imports(
    sources: list[Path],
    target: Callable[[str], Target | None],
    *,
    skip: Path,
    write: bool,
) -> list[Rewritten]:
    """Run the :class:`~nnrag.vendoring.codemods.VendorImports` codemod on every ``.py`` file
    under ``sources`` (files under ``skip``, the vendored folder, are left alone)."""
    from nnrag.vendoring.codemods import VendorImports, run_codemod

    results: list[Rewritten] = []
    skipped = skip.resolve()
    for path in sorted({p for source in sources for p in _python_files(source)}):
        if path.resolve().is_relative_to(skipped):
            continue
        try:
            text = path.read_text(encoding="utf-8")
            new, changes = run_codemod(text, lambda c: VendorImports(c, target), filename=str(path))
        except (OSError, UnicodeDecodeError, NnragError) as error:
            results.append(Rewritten(path=path, error=str(error)))
            continue
        if new == text:
            continue
        diff = "".join(
            difflib.unified_diff(
                text.splitlines(keepends=True),
                new.splitlines(keepends=True),
                f"a/{path}",
                f"b/{path}",
            )
        )
        if write:
            path.write_text(new, encoding="utf-8")
        results.append(Rewritten(path=path, changes=tuple(changes), diff=diff))
    return results


def _python_files(source: Path) -> Iterator[Path]:
    if source.is_file():
        yield source
        return
    if not source.is_dir():
        raise ConfigError(f"{source} is neither a Python file nor a folder", file=source)
    yield from _walk(source, "*.py")


def _walk(root: Path, pattern: str) -> Iterator[Path]:
    for folder, dirs, _ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        yield from sorted(Path(folder).glob(pattern))


def source_lookup(
    cache_dir: Path,
) -> tuple[Callable[[ManifestEntry, str], tuple[str, str] | None], list[str]]:
    """An index-backed ``lookup`` for :func:`targets_of`, and the sources it could not reach.

    Each distinct source record of the manifest is indexed once (from the cache when it is
    up to date), on first use.
    """
    from nnrag.index.symbols import symbols_for
    from nnrag.model import Settings
    from nnrag.vendor import source_spec
    from nnrag.workspace import Workspace

    workspaces: dict[str, Workspace | None] = {}
    unreachable: list[str] = []

    def lookup(entry: ManifestEntry, qualified: str) -> tuple[str, str] | None:
        key = json.dumps(entry.source, sort_keys=True)
        if key not in workspaces:
            try:
                spec = source_spec(entry.source, manifest=Path("nnrag-blocks.json"))
                built = Workspace(Settings(sources=(spec,), cache_dir=cache_dir))
                built.index()
                workspaces[key] = built
            except NnragError as error:
                workspaces[key] = None
                unreachable.append(f"source {entry.source.get('name')!r}: {error}")
        workspace = workspaces[key]
        if workspace is None:
            return None
        index = workspace.index()
        symbols = symbols_for(index)
        parts = qualified.split(".")
        for size in range(len(parts) - 1, 0, -1):
            info = index.module(".".join(parts[:size]))
            if info is None:
                continue
            found = symbols.lookup(info, parts[size:])
            whole = found.consumed == len(parts) - size
            if found.kind == "definition" and found.module is not None and whole:
                return found.module.module, found.name
            return None
        return None

    return lookup, unreachable
