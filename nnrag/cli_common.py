"""What every ``nnrag`` subcommand that reads sources shares: ``--repos``/``--cache``, settings."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nnrag.model import Settings

Handler = Callable[[argparse.Namespace], int]
"""A subcommand: parsed arguments in, exit status out."""


def add_repos_options(parser: argparse.ArgumentParser) -> None:
    """``--repos FILE`` and ``--cache DIR``."""
    parser.add_argument(
        "--repos",
        metavar="FILE",
        help="repos.json to read (default: ./repos.json, or $NNRAG_REPOS)",
    )
    parser.add_argument(
        "--cache",
        metavar="DIR",
        help="cache folder for checkouts, the index and results (default: $NNRAG_CACHE_DIR, "
        "else the user cache dir)",
    )


def sources(args: argparse.Namespace, **overrides: Any) -> Settings:
    """Settings of a command that needs sources; none configured is a ConfigError (exit 2).

    Says on stderr which config it reads when that is not the one the cache's index was
    last built from (a different ``--repos``, $NNRAG_REPOS or ./repos.json).
    """
    from nnrag.config import DEFAULT_REPOS_FILE, REPOS_ENV, load_settings
    from nnrag.errors import ConfigError

    settings = load_settings(args.repos, cache_dir=args.cache, **overrides)
    if settings.repos_file is None:
        raise ConfigError(
            f"no sources configured: no --repos FILE, no ${REPOS_ENV} and no "
            f"./{DEFAULT_REPOS_FILE} in {Path.cwd()}; pass --repos FILE "
            "(examples/repos.json shows the format)"
        )
    if not settings.sources:
        raise ConfigError(
            "names no source; add one (examples/repos.json shows the format)",
            file=settings.repos_file,
        )
    marker = settings.cache_dir / "last-config"
    try:
        last = marker.read_text(encoding="utf-8").strip()
    except OSError:
        last = ""
    if last != str(settings.repos_file):
        if last:
            print(
                f"nnrag {args.command}: reading {settings.repos_file}; the index in "
                f"{settings.cache_dir} was last built from {last}",
                file=sys.stderr,
            )
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{settings.repos_file}\n", encoding="utf-8")
        except OSError:
            pass  # a read-only cache still serves; the note is only a courtesy
    return settings


def category_type(text: str) -> str:
    """``--category``: a block category, checked when the command line is parsed."""
    from nnrag.retrieve.categorize import BLOCK_CATEGORIES

    if text not in BLOCK_CATEGORIES:
        allowed = ", ".join(repr(name) for name in BLOCK_CATEGORIES)
        raise argparse.ArgumentTypeError(f"unknown category {text!r}; use one of: {allowed}")
    return text
