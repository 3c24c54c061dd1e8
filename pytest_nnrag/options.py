"""The plugin's command-line options and ini keys (parsing them imports nothing of nnrag)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Literal

import pytest

if TYPE_CHECKING:
    from nnrag.model import Stage

STAGES = ("parse", "compile", "closed", "import", "instantiate", "forward", "backward")
"""Mirror of ``nnrag.model.STAGES`` (kept here so that option parsing imports nothing)."""
DEFAULT_DEPTH: Stage = "forward"
SEARCH_CPU_S = 20.0
"""Mirror of ``nnrag.model.SEARCH_CPU_S`` (the default of ``--nnrag-search-budget``)."""
Order = Literal["cost", "name", "reverse"]
ORDERS: tuple[Order, ...] = ("cost", "name", "reverse")
"""``--nnrag-order``: likely-slow blocks first (the default), by name, or slow last (to check
that verdicts do not depend on the order); ``pytest_nnrag.schedule`` orders by it."""


def seconds(text: str) -> float:
    """`--nnrag-timeout`, `--nnrag-search-budget`: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds > 0 (e.g. 60), got {text!r}"
        )
    return value


def add_options(parser: pytest.Parser) -> None:
    """Every ``--nnrag-*`` option and ``nnrag_*`` ini key (the plugin's ``pytest_addoption``)."""
    group = parser.getgroup("nnrag", "nnrag: one test per nn.Module block")
    _add_run_options(group)
    _add_output_options(group)
    _add_ci_options(group)
    _add_ini_options(parser)


def _add_run_options(group: pytest.OptionGroup) -> None:
    """What to collect and how to run it."""
    group.addoption(
        "--nnrag-repos",
        metavar="PATH",
        default=None,
        help="Collect one test per block of the sources in this repos.json "
        "(activates the plugin). Ini: nnrag_repos.",
    )
    group.addoption(
        "--nnrag-cache",
        metavar="DIR",
        default=None,
        help="Cache folder for sources, the index and results "
        "(default: $NNRAG_CACHE_DIR or the user cache dir). Ini: nnrag_cache.",
    )
    group.addoption(
        "--nnrag-depth",
        choices=STAGES,
        default=None,
        help=f"Stage every block must reach to pass (default: {DEFAULT_DEPTH}). Ini: nnrag_depth.",
    )
    group.addoption(
        "--nnrag-timeout",
        metavar="S",
        type=seconds,
        default=None,
        help="Seconds a block may take in the sandbox before it fails as a timeout "
        "(default: 60). Ini: nnrag_timeout.",
    )
    group.addoption(
        "--nnrag-search-budget",
        metavar="S",
        type=seconds,
        default=None,
        help="CPU seconds a block's search for constructor arguments and inputs may use, "
        f"counted in the sandbox child's CPU time so load does not change it (default: "
        f"{SEARCH_CPU_S:g}; --nnrag-timeout stays the wall-clock limit). "
        "Ini: nnrag_search_budget.",
    )
    group.addoption(
        "--nnrag-order",
        choices=ORDERS,
        default=None,
        help="Order of the block tests: cost (default): likely-slow blocks first, by the "
        "durations the result cache recorded, else by the size of the block's class, so no "
        "worker ends alone on slow blocks; name: by name; reverse: slow last (verdicts must "
        "not depend on the order).",
    )
    group.addoption(
        "--nnrag-sandbox",
        choices=("default", "strict"),
        default=None,
        help="strict: refuse to run blocks unless every kernel isolation layer (namespaces, "
        "seccomp, Landlock) is active (default: run with what the kernel gives, and say so "
        "in the summary). Ini: nnrag_sandbox.",
    )


def _add_output_options(group: pytest.OptionGroup) -> None:
    """What the run writes, and whether cached results count."""
    group.addoption(
        "--nnrag-report",
        metavar="PATH",
        default=None,
        help="Write the JSON run report (schema: nnrag/report.py) here. Ini: nnrag_report.",
    )
    group.addoption(
        "--nnrag-badge",
        metavar="PATH",
        default=None,
        help="Write an SVG pass-rate badge here, and its shields.io endpoint JSON "
        "beside it (same name, .json). Ini: nnrag_badge.",
    )
    group.addoption(
        "--nnrag-revalidate",
        action="store_true",
        default=False,
        help="Validate every block again, ignoring cached results.",
    )
    group.addoption(
        "--nnrag-dedup",
        action="store_true",
        default=False,
        help="After the run, de-duplicate every block (exact, lexical, structural; class "
        "and closure) and add the figures to the report and summary. Ini: nnrag_dedup.",
    )


def _add_ci_options(group: pytest.OptionGroup) -> None:
    """Judging against a baseline, and sharding (CI)."""
    group.addoption(
        "--nnrag-baseline",
        metavar="FILE",
        default=None,
        help="Expected results (written by --nnrag-update-baseline): a block failing as "
        "recorded is an xfail; failing anew or at an earlier stage fails the run; passing "
        "anew is reported (XPASS). Ini: nnrag_baseline.",
    )
    group.addoption(
        "--nnrag-update-baseline",
        action="store_true",
        default=False,
        help="Write this run's results into the --nnrag-baseline file (blocks not run keep "
        "their entries); no block is judged against the old file.",
    )
    group.addoption(
        "--nnrag-strict",
        action="store_true",
        default=None,
        help="A block that passes where the baseline (or an xfail in repos.json) expects a "
        "failure fails the run, so the baseline is kept current. Ini: nnrag_strict.",
    )
    group.addoption(
        "--nnrag-shard",
        metavar="K/N",
        default=None,
        help="Run only shard K of N: sources split before anything is fetched (linked sources "
        "together), balanced by the --nnrag-durations report. Merge the shards' reports "
        "with `nnrag report merge`.",
    )
    group.addoption(
        "--nnrag-durations",
        metavar="REPORT",
        default=None,
        help="A previous run's report (e.g. the merged one) to balance --nnrag-shard by "
        "(default: the --nnrag-report file, if it exists). Ini: nnrag_durations.",
    )


def _add_ini_options(parser: pytest.Parser) -> None:
    parser.addini("nnrag_repos", "repos.json whose blocks are collected (relative to the ini file)")
    parser.addini("nnrag_baseline", "expected results file (relative to the ini file)")
    parser.addini("nnrag_strict", "a new pass against the baseline fails the run", type="bool")
    parser.addini("nnrag_durations", "previous report to balance shards by")
    parser.addini("nnrag_cache", "nnrag cache folder (relative to the ini file)")
    parser.addini("nnrag_depth", f"stage every block must reach: {', '.join(STAGES)}")
    parser.addini("nnrag_timeout", "seconds per block in the sandbox")
    parser.addini("nnrag_search_budget", "CPU seconds per block for the constructor/input search")
    parser.addini("nnrag_sandbox", "default or strict (every kernel isolation layer required)")
    parser.addini("nnrag_report", "path of the JSON run report (relative to the ini file)")
    parser.addini("nnrag_badge", "path of the SVG pass-rate badge (relative to the ini file)")
    parser.addini("nnrag_dedup", "add de-duplication figures to the report", type="bool")
