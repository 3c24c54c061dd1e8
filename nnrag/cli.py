"""The ``nnrag`` command line: the parser of every subcommand, and the entry point.

Each group of subcommands lives in its own module (``add_*_commands`` and its handlers):
:mod:`nnrag.cli_blocks` (index, list, extract, search, dedup, vendor, refresh),
:mod:`nnrag.cli_validate` (validate, replay), :mod:`nnrag.cli_check` (check, the pre-commit
hook) and :mod:`nnrag.cli_runs` (report, results). They print through :mod:`nnrag.report`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from nnrag import __version__
from nnrag.cli_blocks import add_index_commands, add_search_commands, add_vendor_commands
from nnrag.cli_check import add_check_command
from nnrag.cli_common import Handler
from nnrag.cli_runs import add_run_commands
from nnrag.cli_validate import add_validate_commands
from nnrag.errors import NnragError
from nnrag.workspace import collect_rarely


def build_parser() -> argparse.ArgumentParser:
    """The ``nnrag`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="nnrag",
        description="Dependency-closed, validated nn.Module blocks from PyTorch repositories.",
    )
    parser.add_argument("--version", action="version", version=f"nnrag {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_index_commands(commands)  # in the order `nnrag --help` lists them
    add_validate_commands(commands)
    add_search_commands(commands)
    add_check_command(commands)
    add_vendor_commands(commands)
    add_run_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nnrag`` console script."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    collect_rarely()
    try:
        return handler(args)
    except NnragError as error:
        print(f"nnrag {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nnrag: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``nnrag list | head``): stop quietly, as ``cat`` would; point
        # stdout at devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
