"""pytester tests of --nnrag-dedup and the block categories in the run report and summary."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import datasketch  # noqa: F401  # loaded once here: inline runs cannot re-import numpy
import pytest

import nnrag.retrieve.dedup  # noqa: F401  # same reason: numpy's C module loads once per process

Cli = Callable[..., list[str]]

TWINS = """\
from torch import nn


class Twin(nn.Module):
    def forward(self, x):
        return x + 1


class ChannelLayerNorm(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x)
"""

KINDS = {
    "src:pkg.layers:Broken": "utility",
    "src:pkg.layers:Good": "utility",
    "zoo:zoo.copy:ChannelLayerNorm": "normalization",
    "zoo:zoo.copy:Twin": "utility",
    "zoo:zoo:Tiny": "utility",
}


@pytest.fixture
def twins(pytester: pytest.Pytester, project: Path) -> Path:
    """The plugin project plus ``zoo.copy``: ``Twin`` (``zoo.Tiny`` renamed), a norm layer."""
    (pytester.path / "zoo_src/zoo/copy.py").write_text(TWINS)
    return project


def _report(pytester: pytest.Pytester) -> dict[str, object]:
    data = json.loads((pytester.path / "r.json").read_text())
    assert isinstance(data, dict)
    return data


def test_dedup_figures_and_block_categories(
    pytester: pytest.Pytester, twins: Path, cli: Cli
) -> None:
    result = pytester.runpytest(*cli("--nnrag-dedup", "--nnrag-report", "r.json"))
    result.assert_outcomes(passed=4, failed=2)
    report = _report(pytester)
    dedup = report["dedup"]
    assert isinstance(dedup, dict)
    assert dedup["params"]["lexical_threshold"] == 0.9
    target = dedup["class"]
    assert target["blocks"] == 5
    assert target["exact"] == {"unique": 5, "unique_fraction": 1.0, "merges": 0, "clusters": 0}
    assert target["structural"]["unique"] == 4  # Tiny and Twin differ only in their names
    assert target["structural"]["clusters"] == 1
    assert dedup["closure"]["blocks"] == 5
    assert dedup["closure"]["structural"]["unique"] == 4
    blocks = {entry["id"]: entry for entry in report["blocks"]}  # type: ignore[attr-defined]  # the report is JSON-shaped dict[str, object]
    assert {block_id: entry["block_category"] for block_id, entry in blocks.items()} == KINDS
    assert blocks["src:pkg.layers:Broken"]["category"] == "unresolved-name"  # failure category
    assert report["summary"]["block_categories"] == {  # type: ignore[index]  # the report is JSON-shaped dict[str, object]
        "utility": {"blocks": 4, "passed": 3},
        "normalization": {"blocks": 1, "passed": 1},
    }
    result.stdout.fnmatch_lines(
        [
            "*nnrag summary*",
            "block categories (passed/blocks): utility 3/4, normalization 1/1",
            "dedup exact:      class 5/5 unique (100.0%), 0 clusters; closure 5/5 unique*",
            "dedup lexical:    class */5 unique*",
            "dedup structural: class 4/5 unique (80.0%), 1 clusters; closure 4/5 unique*",
        ]
    )


def test_no_dedup_without_the_option(pytester: pytest.Pytester, twins: Path, cli: Cli) -> None:
    result = pytester.runpytest(*cli("--nnrag-report", "r.json"))
    result.assert_outcomes(passed=4, failed=2)
    report = _report(pytester)
    assert "dedup" not in report
    blocks = report["blocks"]
    assert {e["id"]: e["block_category"] for e in blocks} == KINDS  # type: ignore[attr-defined]  # the report is JSON-shaped dict[str, object]
    assert "dedup exact:" not in result.stdout.str()


def test_dedup_ini_option(pytester: pytest.Pytester, twins: Path, cli: Cli) -> None:
    pytester.makeini("[pytest]\nnnrag_dedup = true\n")
    result = pytester.runpytest(*cli("--nnrag-report", "r.json"))
    result.assert_outcomes(passed=4, failed=2)
    assert _report(pytester)["dedup"]["class"]["blocks"] == 5  # type: ignore[index]  # the report is JSON-shaped dict[str, object]


def test_block_category_reaches_junitxml(pytester: pytest.Pytester, twins: Path, cli: Cli) -> None:
    pytester.runpytest(*cli("--junitxml", "j.xml"))
    xml = (pytester.path / "j.xml").read_text()
    assert xml.count('name="nnrag_block_category"') == 5
    assert 'name="nnrag_block_category" value="normalization"' in xml


def test_dedup_and_categories_under_xdist(pytester: pytest.Pytester, twins: Path, cli: Cli) -> None:
    result = pytester.runpytest_subprocess(
        *cli("-n", "2", "--nnrag-dedup", "--nnrag-report", "r.json", "-p", "no:cacheprovider")
    )
    result.assert_outcomes(passed=4, failed=2)
    report = _report(pytester)
    blocks = report["blocks"]
    assert {e["id"]: e["block_category"] for e in blocks} == KINDS  # type: ignore[attr-defined]  # the report is JSON-shaped dict[str, object]
    assert report["dedup"]["class"]["structural"]["unique"] == 4  # type: ignore[index]  # the report is JSON-shaped dict[str, object]
    result.stdout.fnmatch_lines(["dedup structural: class 4/5 unique (80.0%)*"])
