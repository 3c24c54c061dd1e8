"""``nnrag check``: the static closure check of block files (the pre-commit hook's command)."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nnrag.check.static import Importer
    from nnrag.model import Diagnostic

_CODE = re.compile(r"^[A-Z]+[0-9]*$")


def add_check_command(commands: Any) -> None:
    """Add ``check`` to the ``nnrag`` subcommands."""
    check = commands.add_parser("check", help="static closure check of vendored block files")
    check.add_argument("files", nargs="*", metavar="FILE")
    check.add_argument("--pristine", action="store_true", help="body must match its digest")
    check.add_argument("--import", dest="do_import", action="store_true", help="sandboxed import")
    check.add_argument("--cache", metavar="DIR", help="cache folder (findings in DIR/checks)")
    check.add_argument("--no-cache", action="store_true", help="always check from scratch")
    check.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="check in N processes (default 1)"
    )
    check.add_argument(
        "--select",
        type=_codes,
        metavar="CODES",
        help="only these codes or prefixes, comma-separated (e.g. NNR1,NNR201)",
    )
    check.add_argument(
        "--ignore",
        type=_codes,
        default=(),
        metavar="CODES",
        help="leave out these codes or prefixes (a line's `# noqa: NNR101` does it for a line)",
    )
    check.add_argument(
        "--fix",
        action="store_true",
        help="re-close blocks from their source (inline newly used source definitions, "
        "replace source imports, add requires: lines); exit 1 if a file changed (needs nnrag[fix])",
    )
    check.add_argument(
        "--repos", metavar="FILE", help="with --fix: repos.json naming sources not in a manifest"
    )
    check.set_defaults(handler=cmd_check)


def _codes(text: str) -> tuple[str, ...]:
    codes = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    bad = [code for code in codes if not _CODE.match(code)]
    if bad or not codes:
        raise argparse.ArgumentTypeError(
            f"expected finding codes or prefixes such as NNR101 or NNR1, got {text!r}"
        )
    return codes


def kept(
    findings: Iterable[Diagnostic],
    lines: Sequence[str],
    *,
    select: Sequence[str] | None,
    ignore: Sequence[str],
) -> list[Diagnostic]:
    """The findings left after ``--select``/``--ignore`` (code prefixes) and ``# noqa``."""
    from nnrag.diagnostics import unsuppressed

    result = []
    for finding in unsuppressed(findings, lines):
        if select is not None and not finding.code.startswith(tuple(select)):
            continue
        if ignore and finding.code.startswith(tuple(ignore)):
            continue
        result.append(finding)
    return result


def _files(targets: Sequence[str]) -> list[Path]:
    from nnrag.vendor import read_manifest

    files: list[Path] = []
    for target in [Path(name) for name in targets] or [Path(".")]:
        if target.is_dir():
            listed = [target / entry.file for entry in read_manifest(target)]
            files += listed or sorted(target.glob("*.py"))
        else:
            files.append(target)
    return files


def cmd_check(args: argparse.Namespace) -> int:
    """``nnrag check FILE|DIR...``: ``path:line:col: CODE message`` per finding, exit 1 if any.

    A folder stands for the block files of its ``nnrag-blocks.json`` (else its ``*.py``
    files); no argument means the current folder. Diagnostics of file contents checked before
    come from the check cache (``--cache``/$NNRAG_CACHE_DIR/user cache dir, ``checks/``).
    ``--select``/``--ignore`` and ``# noqa: NNRxxx`` on a finding's line leave findings out.
    """
    import os

    from nnrag.check.cache import CheckCache
    from nnrag.check.files import check_files

    cache: CheckCache | None = None
    if not args.no_cache:
        folder = args.cache or os.environ.get("NNRAG_CACHE_DIR")
        if not folder:
            import platformdirs

            folder = platformdirs.user_cache_dir("nnrag", appauthor=False)
        cache = CheckCache(Path(folder).expanduser() / "checks")
    files = _files(args.files)
    if not files:
        print("nnrag check: no block files to check", file=sys.stderr)
        return 0
    fixed = 0
    if args.fix:  # LibCST and the index: only with --fix
        from nnrag.vendoring.commands import fix_command

        fixed = fix_command(files, repos=args.repos, cache=args.cache)
    from nnrag.vendor import manifest_definitions

    definitions, unreadable = manifest_definitions(files) if args.pristine else ({}, {})
    checked = check_files(
        files, pristine=args.pristine, definitions=definitions, cache=cache, workers=args.jobs
    )
    with contextlib.ExitStack() as stack:
        importer = stack.enter_context(_run_importer()) if args.do_import else None
        failed = _print_findings(files, checked, unreadable, importer, args)
    count = f"{len(files)} block file{'s' if len(files) != 1 else ''}"
    if failed:
        print(f"nnrag check: {failed} of {count} failed", file=sys.stderr)
    elif not fixed:
        print(f"All checks passed! ({count})", file=sys.stderr)
    if fixed:
        print(f"nnrag check: fixed {fixed} file(s); review and stage them", file=sys.stderr)
    return 1 if failed or fixed else 0


def _print_findings(
    files: Sequence[Path],
    checked: Sequence[tuple[Diagnostic, ...] | OSError],
    unreadable: Mapping[Path, OSError],
    importer: Importer | None,
    args: argparse.Namespace,
) -> int:
    """Print each file's findings (the sandboxed import's when it is clean); count failures."""
    from nnrag.check.static import import_findings
    from nnrag.report import format_diagnostic

    failed = 0
    for path, result in _progress(list(zip(files, checked, strict=True)), importer is not None):
        try:
            if path in unreadable:
                raise unreadable[path]
            if isinstance(result, OSError):
                raise result
            findings = _selected(result, path, args)
            if importer is not None and not findings:
                findings = _selected(import_findings(path, importer=importer), path, args)
        except OSError as error:
            print(f"{path}: error: cannot read: {error.strerror or error}")
            failed += 1
            continue
        for finding in findings:
            print(format_diagnostic(finding, path=str(path)))
        failed += bool(findings)
    return failed


@contextlib.contextmanager
def _run_importer() -> Iterator[Importer]:
    """``check --import``'s importer: one sandbox for the whole run, started on first use."""
    import functools

    from nnrag.validate.sandbox import Sandbox
    from nnrag.validate.stages import validate_file

    with Sandbox() as sandbox:
        yield functools.partial(validate_file, depth="import", sandbox=sandbox)


def _selected(
    findings: Sequence[Diagnostic], path: Path, args: argparse.Namespace
) -> list[Diagnostic]:
    if not findings:
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    return kept(findings, lines, select=args.select, ignore=args.ignore)


def _progress(pairs: list[Any], importing: bool) -> Iterable[Any]:
    """``--import`` on a terminal: a progress bar once the imports take more than a second."""
    if not importing or not sys.stderr.isatty():
        return pairs
    from tqdm import tqdm

    bar: Iterable[Any] = tqdm(
        pairs, desc="nnrag check --import", unit="file", delay=1.0, leave=False
    )
    return bar
