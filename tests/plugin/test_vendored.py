"""pytester tests of ``--nnrag-vendored DIR``: items per vendored block file, outcomes, errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from nnrag.blockfile.header import body_digest, render_header
from nnrag.vendor import ManifestEntry, write_manifest

GOOD = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Good(nn.Module):
        def __init__(self, dim: int = 4) -> None:
            super().__init__()
            self.lin = nn.Linear(dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x)
    """
)
OPEN = textwrap.dedent(
    """\
    from torch import nn
    from .missing import helper


    class Open(nn.Module):
        def forward(self, x):
            return helper(x)
    """
)


def block_file(folder: Path, name: str, body: str) -> str:
    block_id = f"src:pkg.layers:{name}"
    header = render_header(
        block_id=block_id,
        source="/src (path)",
        revision="abc",
        source_packages=["pkg"],
        files=[("pkg/layers.py", "swh:1:cnt:" + "b" * 40)],
        license="MIT",
        requires=["torch>=2.1"],
        digest=body_digest(body),
    )
    (folder / f"{name}.py").write_text(header + "\n" + body)
    return block_id


@pytest.fixture
def vendored(pytester: pytest.Pytester) -> Path:
    """``vendor/blocks`` with two vendored blocks (Good closes, Open does not) and a manifest."""
    folder = pytester.path / "vendor" / "blocks"
    folder.mkdir(parents=True)
    entries = []
    for name, body in (("Good", GOOD), ("Open", OPEN)):
        block_id = block_file(folder, name, body)
        entries.append(
            ManifestEntry(
                id=block_id,
                file=f"{name}.py",
                spec=f"{name}.spec.json",
                source={"name": "src", "kind": "path", "location": "/src"},
                origin="/src (path)",
                revision="abc",
                files=(),
                license="MIT",
                requirements=("torch>=2.1",),
                digest=body_digest(body),
            )
        )
    write_manifest(folder, entries)
    (folder / "__init__.py").write_text("")
    return folder


def test_items_and_outcomes_at_closed(pytester: pytest.Pytester, vendored: Path) -> None:
    result = pytester.runpytest(
        "--nnrag-vendored", "vendor/blocks", "--nnrag-depth", "closed", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "nnrag vendored: *vendor/blocks",
            "*src:pkg.layers:Open did not reach closed: failed at stage closed*",
            "category: source-import",
            "message: *Open.py:*:1: NNR201 relative import 'from .missing import ...'*",
            "FAILED vendor/blocks::Open.py*",
        ]
    )


def test_report_and_summary(pytester: pytest.Pytester, vendored: Path) -> None:
    result = pytester.runpytest(
        "--nnrag-vendored", "vendor/blocks", "--nnrag-depth", "closed",
        "--nnrag-report", "out/report.json",
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*nnrag summary*", "nnrag wrote *report.json"])
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert "src:pkg.layers:Good" in json.dumps(report)
    assert "src:pkg.layers:Open" in json.dumps(report)


def test_node_ids_are_sorted_and_selectable(pytester: pytest.Pytester, vendored: Path) -> None:
    items, _ = pytester.inline_genitems("--nnrag-vendored", "vendor/blocks")
    assert [item.nodeid for item in items] == ["vendor/blocks::Good.py", "vendor/blocks::Open.py"]
    result = pytester.runpytest(
        "--nnrag-vendored", "vendor/blocks", "--nnrag-depth", "closed", "-k", "Good"
    )
    result.assert_outcomes(passed=1, deselected=1)


def test_without_manifest_header_files_are_collected(
    pytester: pytest.Pytester, vendored: Path
) -> None:
    (vendored / "nnrag-blocks.json").unlink()
    (vendored / "helper.py").write_text("X = 1\n")  # no nnrag header: not a block
    items, _ = pytester.inline_genitems("--nnrag-vendored", "vendor/blocks")
    assert [item.name for item in items] == ["Good.py", "Open.py"]


def test_hand_edit_that_opens_the_block_fails(pytester: pytest.Pytester, vendored: Path) -> None:
    good = vendored / "Good.py"
    good.write_text(good.read_text().replace("return self.lin(x)", "return scale(self.lin(x))"))
    result = pytester.runpytest(
        "--nnrag-vendored", "vendor/blocks", "--nnrag-depth", "closed", "-k", "Good"
    )
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(["category: unresolved-name", "*NNR101 undefined name 'scale'*"])


def test_not_a_folder_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--nnrag-vendored", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--nnrag-vendored: *nowhere is not a folder*"])


def test_inert_without_the_option(pytester: pytest.Pytester, vendored: Path) -> None:
    pytester.makepyfile(
        test_inert="""
        import sys

        def test_nothing_loaded(pytestconfig):
            assert not [m for m in sys.modules if m == "nnrag" or m.startswith("nnrag.")]
            assert pytestconfig.pluginmanager.get_plugin("nnrag-vendored-session") is None
            assert pytestconfig.pluginmanager.get_plugin("nnrag-vendored") is not None
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_inert.py")
    result.assert_outcomes(passed=1)


def test_help_lists_the_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--nnrag-vendored=DIR*"])


@pytest.mark.integration
def test_forward_in_the_sandbox(pytester: pytest.Pytester, vendored: Path) -> None:
    result = pytester.runpytest_subprocess(
        "--nnrag-vendored", "vendor/blocks", "--nnrag-depth", "backward", "-k", "Good"
    )
    result.assert_outcomes(passed=1, deselected=1)


SPINNING = textwrap.dedent(
    """\
    import time

    import torch
    from torch import nn


    class Spinning(nn.Module):
        def __init__(self, dim: int = 4) -> None:
            super().__init__()
            self.lin = nn.Linear(dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            start = time.process_time()
            while time.process_time() - start < 1.0:
                pass
            raise ValueError("this block never runs")
    """
)


@pytest.mark.integration
def test_the_search_budget_reaches_vendored_blocks(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "vendor" / "spin"
    folder.mkdir(parents=True)
    block_file(folder, "Spinning", SPINNING)  # no manifest: collected by its header
    result = pytester.runpytest_subprocess(
        "--nnrag-vendored", "vendor/spin", "--nnrag-search-budget", "2"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*search used its budget of 2 CPU seconds*"])


def test_beside_repos_one_report(pytester: pytest.Pytester, vendored: Path, project: Path) -> None:
    result = pytester.runpytest(
        "--nnrag-repos", "repos.json", "--nnrag-cache", "cache", "--nnrag-depth", "closed",
        "--nnrag-vendored", "vendor/blocks", "--nnrag-report", "report.json",
    )  # fmt: skip
    # repos.json: Good, Tiny pass; Broken and a file that does not parse fail. vendored: 1 + 1
    result.assert_outcomes(passed=3, failed=3)
    assert result.stdout.str().count("nnrag summary") == 1
    text = (pytester.path / "report.json").read_text()
    assert "src:pkg.layers:Open" in text  # the vendored block, in the one report
    assert "zoo:zoo:Tiny" in text


def test_xdist_report(pytester: pytest.Pytester, vendored: Path) -> None:
    result = pytester.runpytest_subprocess(
        "--nnrag-vendored", "vendor/blocks", "--nnrag-depth", "closed", "-n", "2",
        "--nnrag-report", "report.json", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    summary = json.loads((pytester.path / "report.json").read_text())["summary"]
    assert (summary["blocks"], summary["passed"], summary["failed"]) == (2, 1, 1)
    assert summary["categories"] == {"source-import": 1}
