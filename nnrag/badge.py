"""The pass-rate badge of a run report: an SVG (made by ``anybadge``) and a shields.io endpoint.

``--nnrag-badge badge.svg`` / ``nnrag validate --badge`` write ``nnrag | 87% (812/934)``,
coloured by pass rate; beside it, ``badge.json`` (the SVG's name with a ``.json`` suffix) is a
shields.io endpoint document (``{"schemaVersion": 1, "label", "message", "color"}``) for
``https://img.shields.io/endpoint?url=...``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nnrag.report import counted_items

# Shields.io's named colours, by the lowest pass rate that earns them.
_COLORS: tuple[tuple[float, str, str], ...] = (
    (0.90, "brightgreen", "#4c1"),
    (0.75, "green", "#97ca00"),
    (0.60, "yellowgreen", "#a4a61d"),
    (0.40, "yellow", "#dfb317"),
    (0.20, "orange", "#fe7d37"),
    (0.00, "red", "#e05d44"),
)


def badge_message(report: Mapping[str, Any]) -> str:
    """The badge's value, e.g. ``87% (812/934)``."""
    summary = report["summary"]
    return f"{summary['pass_rate']:.0%} ({summary['passed']}/{counted_items(summary)})"


def badge_color(rate: float) -> tuple[str, str]:
    """Shields colour name and hex code for a pass rate in ``[0, 1]``."""
    for floor, name, code in _COLORS:
        if rate >= floor:
            return name, code
    return _COLORS[-1][1], _COLORS[-1][2]


def shields_endpoint(report: Mapping[str, Any], *, label: str = "nnrag") -> dict[str, Any]:
    """The shields.io endpoint document for ``report``."""
    name, _ = badge_color(float(report["summary"]["pass_rate"]))
    return {"schemaVersion": 1, "label": label, "message": badge_message(report), "color": name}


def badge_svg(report: Mapping[str, Any], *, label: str = "nnrag") -> str:
    """The SVG badge ``label | 87% (812/934)`` (made by ``anybadge``)."""
    import anybadge

    _, code = badge_color(float(report["summary"]["pass_rate"]))
    badge = anybadge.Badge(label=label, value=badge_message(report), default_color=code)
    return str(badge.badge_svg_text)


def write_badge(
    report: Mapping[str, Any], path: Path, *, label: str = "nnrag"
) -> tuple[Path, Path]:
    """Write the SVG badge to ``path`` and the shields endpoint JSON beside it.

    The endpoint file has the badge's name with a ``.json`` suffix (``badge.svg`` ->
    ``badge.json``). Returns both paths.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(badge_svg(report, label=label), encoding="utf-8")
    endpoint = path.with_suffix(".json")
    if endpoint == path:  # the SVG itself was asked for as a .json path
        endpoint = path.with_suffix(".endpoint.json")
    text = json.dumps(shields_endpoint(report, label=label), indent=2) + "\n"
    endpoint.write_text(text, encoding="utf-8")
    return path, endpoint
