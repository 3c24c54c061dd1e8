"""The run's state from the plugin's options and ini keys: paths, depth, timeout, shard."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_nnrag.options import DEFAULT_DEPTH, STAGES, seconds
from pytest_nnrag.state import NnragState

if TYPE_CHECKING:
    from nnrag.baseline import Baseline
    from nnrag.model import Settings, Stage


def _ini_base(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath else config.rootpath


def path_option(config: pytest.Config, name: str) -> Path | None:
    """A path option: the flag relative to the invocation folder, else the ini value."""
    flag = config.getoption(name)
    if flag:
        return (config.invocation_params.dir / str(flag)).resolve()
    ini = str(config.getini(name) or "").strip()
    if ini:
        return (_ini_base(config) / ini).resolve()
    return None


def _depth(config: pytest.Config) -> Stage:
    flag = config.getoption("nnrag_depth")
    if flag:
        return flag  # type: ignore[no-any-return]  # argparse checked the choices
    ini = str(config.getini("nnrag_depth") or "").strip()
    if not ini:
        return DEFAULT_DEPTH
    if ini not in STAGES:
        raise pytest.UsageError(
            f"ini option nnrag_depth = {ini!r} is not a stage; use one of {', '.join(STAGES)}"
        )
    return ini  # type: ignore[return-value]  # checked against STAGES just above


def _seconds_option(config: pytest.Config, name: str) -> float | None:
    """The flag ``--nnrag-...`` or ini key ``name``: seconds > 0, or ``None`` when unset."""
    flag = config.getoption(name)
    if flag is not None:
        return float(flag)
    ini = str(config.getini(name) or "").strip()
    if not ini:
        return None
    try:
        return seconds(ini)
    except argparse.ArgumentTypeError:
        raise pytest.UsageError(
            f"ini option {name} = {ini!r}: expected a number of seconds > 0, e.g. {name} = 60"
        ) from None


def make_state(config: pytest.Config, repos: Path) -> NnragState:
    if not repos.is_file():
        raise pytest.UsageError(
            f"--nnrag-repos: {repos} is not a file; pass the path of a repos.json "
            "(examples/repos.json shows the format)"
        )
    from nnrag.config import load_settings
    from nnrag.errors import NnragError

    overrides: dict[str, Any] = {
        "depth": _depth(config),
        "revalidate": bool(config.getoption("nnrag_revalidate")),
    }
    for name, key in (("nnrag_timeout", "timeout_s"), ("nnrag_search_budget", "search_cpu_s")):
        value = _seconds_option(config, name)
        if value is not None:
            overrides[key] = value
    mode = config.getoption("nnrag_sandbox") or str(config.getini("nnrag_sandbox") or "").strip()
    if mode not in ("", "default", "strict"):
        raise pytest.UsageError(f"ini option nnrag_sandbox = {mode!r}: expected default or strict")
    if mode:
        overrides["sandbox"] = mode
    report_path = path_option(config, "nnrag_report")
    try:
        settings = load_settings(repos, cache_dir=path_option(config, "nnrag_cache"), **overrides)
        shard = _shard(config, settings, report_path)
        baseline = _baseline(config)
    except NnragError as error:  # ConfigError, CacheError: the user's input
        raise pytest.UsageError(str(error)) from None
    if shard is not None:
        settings = replace(
            settings, sources=tuple(s for s in settings.sources if s.name in shard[2])
        )
    strict = config.getoption("nnrag_strict")
    return NnragState(
        settings=settings,
        repos_file=repos,
        report_path=report_path,
        badge_path=path_option(config, "nnrag_badge"),
        dedup=bool(config.getoption("nnrag_dedup") or config.getini("nnrag_dedup")),
        baseline=baseline,
        update_baseline=bool(config.getoption("nnrag_update_baseline")),
        strict=bool(config.getini("nnrag_strict") if strict is None else strict),
        shard=shard,
        order=config.getoption("nnrag_order") or "cost",
    )


def _shard(
    config: pytest.Config, settings: Settings, report_path: Path | None
) -> tuple[int, int, tuple[str, ...]] | None:
    """(K, N, the shard's sources) for ``--nnrag-shard K/N``, else ``None``."""
    text = config.getoption("nnrag_shard")
    if not text:
        return None
    from nnrag.shard import assign, parse_shard, read_history

    index, count = parse_shard(str(text))
    history = read_history(path_option(config, "nnrag_durations") or report_path)
    names = [spec.name for spec in settings.sources]
    return index, count, tuple(assign(names, count, history)[index - 1])


def _baseline(config: pytest.Config) -> Baseline | None:
    path = path_option(config, "nnrag_baseline")
    if path is None:
        if config.getoption("nnrag_update_baseline"):
            raise pytest.UsageError(
                "--nnrag-update-baseline needs the file to write: pass --nnrag-baseline FILE "
                "(or set the ini option nnrag_baseline)"
            )
        return None
    from nnrag.baseline import load_baseline

    return load_baseline(path)
