"""The ``nnrag`` commands of vendoring that rewrite files: ``check --fix``, ``vendor``.

Adapters like :mod:`nnrag.cli` (argument values in, printed lines and an exit code out);
kept apart so that ``nnrag check`` without ``--fix`` never imports them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["fix_command", "vendor_command"]


def fix_command(files: Sequence[Path], *, repos: str | None, cache: str | None) -> int:
    """``nnrag check --fix``: re-close blocks from their source; the number of files changed.

    Prints ``path: fixed: what`` per change and ``path: cannot fix: why`` per remaining
    problem (the check that follows reports the findings themselves).
    """
    from nnrag.config import load_settings
    from nnrag.errors import ConfigError

    try:
        import libcst  # noqa: F401  (only to give a clear error before any work)
    except ImportError:
        raise ConfigError(
            "--fix rewrites files with LibCST, which is not installed: pip install 'nnrag[fix]'"
        ) from None
    from nnrag.vendoring.fix import fix_files

    settings = load_settings(repos, cache_dir=cache)
    changed = 0
    for result in fix_files(list(files), settings=settings):
        for change in result.changes:
            print(f"{result.path}: fixed: {change}")
        for reason in result.unfixable:
            print(f"{result.path}: cannot fix: {reason}")
        changed += bool(result.changes)
    return changed


def vendor_command(args: argparse.Namespace) -> int:
    """``nnrag vendor --rewrite-imports SRC...``: import vendored blocks from the vendored
    folder instead of their source package (LibCST codemod); ``--check`` only shows the diff.
    """
    from nnrag.config import load_settings
    from nnrag.errors import ConfigError

    if not args.rewrite_imports:
        raise ConfigError("nothing to do: pass --rewrite-imports SRC_DIR (your own code)")
    try:
        import libcst  # noqa: F401  (only to give a clear error before any work)
    except ImportError:
        raise ConfigError(
            "--rewrite-imports rewrites files with LibCST, which is not installed: "
            "pip install 'nnrag[fix]'"
        ) from None
    from nnrag.vendor import read_manifest
    from nnrag.vendoring.rewrite import (
        find_manifest,
        package_name,
        rewrite_imports,
        source_lookup,
        targets_of,
    )

    root = Path.cwd()
    folder = Path(args.blocks) if args.blocks else find_manifest(root)
    entries = read_manifest(folder)
    if not entries:
        raise ConfigError(f"no vendored blocks in {folder}; vendor some with extract --into")
    module = args.module or package_name(folder, root)
    lookup, unreachable = source_lookup(load_settings(None, cache_dir=args.cache).cache_dir)
    target = targets_of(entries, module, lookup=lookup)
    results = rewrite_imports(
        [Path(s) for s in args.rewrite_imports], target, skip=folder, write=not args.check
    )
    for message in unreachable:
        print(
            f"nnrag vendor: warning: {message}; only exact import paths were matched",
            file=sys.stderr,
        )
    for result in results:
        if result.error:
            print(f"{result.path}: error: {result.error}")
            continue
        if args.check:
            print(result.diff, end="")
        else:
            for change in result.changes:
                print(f"{result.path}: {change}")
    changed = sum(bool(r.diff) for r in results)
    verb = "would rewrite" if args.check else "rewrote"
    print(f"nnrag vendor: {verb} {changed} file(s) to import from {module}", file=sys.stderr)
    failed = any(r.error for r in results)
    return 1 if failed or (args.check and changed) else 0
