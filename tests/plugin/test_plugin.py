"""pytester tests of the nnrag plugin: activation, collection, outcomes, options, artifacts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nnrag.model import SEARCH_CPU_S, STAGES
from pytest_nnrag import options

Cli = Callable[..., list[str]]

GOOD = ["repos.json::src::pkg.layers.Good", "repos.json::zoo::zoo.Tiny"]
BROKEN = ["repos.json::src::<parse-errors>", "repos.json::src::pkg.layers.Broken"]
COLLECTED_IDS = sorted(GOOD + BROKEN)
"""As collected (``pytest_itemcollected``): by source, problems first, then blocks by name."""
ALL_IDS = [  # as run: blocks moved likely-slow first (Good's class is the largest)
    "repos.json::src::<parse-errors>",
    "repos.json::src::pkg.layers.Good",
    "repos.json::src::pkg.layers.Broken",
    "repos.json::zoo::zoo.Tiny",
]

INERT_CHECK = """
import sys

def test_nothing_loaded(pytestconfig):
    assert "torch" not in sys.modules
    loaded = sorted(m for m in sys.modules if m == "nnrag" or m.startswith("nnrag."))
    assert loaded == []
    assert pytestconfig.pluginmanager.get_plugin("nnrag-session") is None
    assert pytestconfig.pluginmanager.get_plugin("nnrag") is not None
"""


def test_stage_mirror_matches_the_model() -> None:
    assert options.STAGES == STAGES


def test_search_budget_mirror_matches_the_model() -> None:
    assert options.SEARCH_CPU_S == SEARCH_CPU_S


# --------------------------------------------------------------------------- activation


def test_inert_without_repos(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inert=INERT_CHECK)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "nnrag summary" not in result.stdout.str()


def test_help_lists_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "nnrag: one test per nn.Module block:",
            "*--nnrag-repos=PATH*",
            "*--nnrag-depth=*",
            "*--nnrag-badge=PATH*",
            "*--nnrag-revalidate*",
        ]
    )


def test_no_torch_in_the_test_process(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    pytester.makepyfile(
        test_mine="""
        import sys

        def test_uses_the_index(nnrag_index, nnrag_workspace):
            assert "torch" not in sys.modules
            assert [m.module for m in nnrag_index.modules("zoo")] == ["zoo"]
            assert len(nnrag_workspace.blocks()) == 3
        """
    )
    result = pytester.runpytest_subprocess(*cli("-p", "no:cacheprovider"))
    result.assert_outcomes(passed=3, failed=2)


def test_a_run_collects_its_old_generation_rarely(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    pytester.makepyfile(
        test_mine="""
        import gc

        from nnrag.workspace import FULL_COLLECTION_EVERY

        def test_threshold():
            assert gc.get_threshold()[2] >= FULL_COLLECTION_EVERY
        """
    )
    result = pytester.runpytest_subprocess(*cli("-p", "no:cacheprovider", "-k", "threshold"))
    result.assert_outcomes(passed=1)
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "threshold")
    plain.assert_outcomes(failed=1)  # without --nnrag-repos the plugin changes nothing


# --------------------------------------------------------------------------- collection


def test_collects_one_item_per_block_sorted(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    items, _ = pytester.inline_genitems(*cli())
    assert [item.nodeid for item in items] == COLLECTED_IDS
    blocks = [item for item in items if hasattr(item, "block")]
    assert [item.block_id for item in blocks] == [  # type: ignore[attr-defined]  # collected items are pytest.Item; these are BlockItems
        "src:pkg.layers:Broken",
        "src:pkg.layers:Good",
        "zoo:zoo:Tiny",
    ]
    assert all(item.get_closest_marker("nnrag") for item in items)
    assert blocks[0].reportinfo()[2] == "[nnrag] src:pkg.layers:Broken"


def test_collect_only_beside_own_tests(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    result = pytester.runpytest(*cli("--collect-only", "-q"))
    result.stdout.fnmatch_lines([*ALL_IDS, "test_mine.py::test_mine", "5 tests collected*"])
    assert result.ret == pytest.ExitCode.OK


def test_a_cache_inside_the_project_is_never_collected(
    pytester: pytest.Pytester, project: Path
) -> None:
    """Checkouts in the cache hold other projects' tests (an sdist's ``tests/*_test.py``)."""
    options = ["--nnrag-repos", "repos.json", "--nnrag-cache", "nnrag-cache"]
    pytester.runpytest(*options, "--nnrag-depth", "closed", "--collect-only")
    checkout = pytester.path / "nnrag-cache" / "checkouts" / "pypi" / "lib" / "tests"
    checkout.mkdir(parents=True)
    (checkout / "broken_test.py").write_text("import not_installed_anywhere\n")
    result = pytester.runpytest(*options, "--collect-only", "-q")
    result.stdout.fnmatch_lines([*ALL_IDS, "4 tests collected*"])
    assert "broken_test" not in result.stdout.str()
    plain = pytester.runpytest("-q")  # the project's own run, without nnrag options
    assert plain.ret == pytest.ExitCode.NO_TESTS_COLLECTED, plain.stdout.str()


def test_explicit_test_path_adds_blocks(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    items, _ = pytester.inline_genitems("test_mine.py", *cli())
    assert [item.nodeid for item in items] == ["test_mine.py::test_mine", *COLLECTED_IDS]


def test_node_id_selects_one_block(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    result = pytester.runpytest("repos.json::src::pkg.layers.Good", *cli("-v"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["repos.json::src::pkg.layers.Good PASSED*"])


def test_repos_file_outside_rootdir(pytester: pytest.Pytester, project: Path) -> None:
    inner = pytester.mkdir("work")
    result = pytester.runpytest(
        str(inner),
        "--rootdir",
        str(inner),
        "--nnrag-repos",
        str(project),
        "--nnrag-cache",
        str(pytester.path / ".nnrag-cache"),
        "--nnrag-depth",
        "closed",
        "--collect-only",
        "-q",
    )
    result.stdout.fnmatch_lines(ALL_IDS)


# --------------------------------------------------------------------------- outcomes


def test_outcomes_and_failure_text(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    result = pytester.runpytest(*cli())
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*src:pkg.layers:Broken did not reach closed: failed at stage closed*",
            "category: unresolved-name",
            "message: *undefined_helper*",
            "file: *.py",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*1 file of source 'src' not indexed:", "*pkg/bad.py:1:*"], consecutive=False
    )
    output = result.stdout.str()
    assert "Traceback" not in output
    assert "nnrag/validate/stages.py" not in output
    result.stdout.fnmatch_lines(["*= nnrag summary =*", "nnrag: 2/3 blocks reached closed*"])


def test_keyword_selection(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    result = pytester.runpytest(*cli("-k", "Good or Tiny"))
    result.assert_outcomes(passed=2, deselected=2)


def test_last_failed_reruns_only_failures(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    pytester.runpytest(*cli()).assert_outcomes(passed=2, failed=2)
    result = pytester.runpytest(*cli("--lf"))
    result.assert_outcomes(failed=2, deselected=2)


def test_deselect_and_exitfirst(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    result = pytester.runpytest(*cli("--deselect", "repos.json::src::<parse-errors>", "-x"))
    result.assert_outcomes(passed=1, failed=1, deselected=1)  # Good runs first, then Broken


def test_junitxml_properties(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    pytester.runpytest(*cli("--junitxml", "out.xml", "-k", "Broken"))
    xml = (pytester.path / "out.xml").read_text()
    assert '<property name="nnrag_block_id" value="src:pkg.layers:Broken"' in xml
    assert '<property name="nnrag_category" value="unresolved-name"' in xml
    assert '<property name="nnrag_cached" value="false"' in xml
    assert '<property name="nnrag_stage_reached" value="compile"' in xml


# --------------------------------------------------------------------------- options


def test_ini_options(pytester: pytest.Pytester, project: Path) -> None:
    pytester.makeini(
        """
        [pytest]
        nnrag_repos = repos.json
        nnrag_cache = .nnrag-cache
        nnrag_depth = closed
        nnrag_timeout = 30
        nnrag_report = out/report.json
        nnrag_badge = out/badge.svg
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=2)
    report = json.loads((pytester.path / "out/report.json").read_text())
    assert report["depth"] == "closed"
    assert (pytester.path / "out/badge.svg").is_file()
    assert (pytester.path / "out/badge.json").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nnrag-repos", "missing.json"], "*missing.json is not a file*"),
        (["--nnrag-repos", "repos.json", "--nnrag-depth", "deep"], "*invalid choice: 'deep'*"),
        (["--nnrag-repos", "repos.json", "--nnrag-timeout", "-1"], "*seconds > 0*"),
        (["--nnrag-repos", "repos.json", "--nnrag-search-budget", "0"], "*seconds > 0*"),
        (["--nnrag-repos", "broken.json"], "*broken.json:1:*malformed JSON*"),
        (["--nnrag-repos", "repos.json", "-o", "nnrag_depth=deep"], "*nnrag_depth = 'deep'*"),
        (["--nnrag-repos", "repos.json", "-o", "nnrag_timeout=soon"], "*nnrag_timeout = 60*"),
        (
            ["--nnrag-repos", "repos.json", "-o", "nnrag_search_budget=lots"],
            "*nnrag_search_budget = 60*",
        ),
    ],
)
def test_usage_errors(
    pytester: pytest.Pytester, project: Path, args: list[str], message: str
) -> None:
    (pytester.path / "broken.json").write_text("{not json")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_unknown_source_key_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "repos.json").write_text(json.dumps([{"path": ".", "colour": "red"}]))
    result = pytester.runpytest("--nnrag-repos", "repos.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*repos.json*colour*"])


# --------------------------------------------------------------------------- artifacts


def test_report_and_badge(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    result = pytester.runpytest(*cli("--nnrag-report", "report.json", "--nnrag-badge", "b.svg"))
    result.assert_outcomes(passed=2, failed=2)
    report = json.loads((pytester.path / "report.json").read_text())
    # source_failures: the sources that could not be fetched or indexed (here: a parse error)
    assert list(report) == [
        "nnrag_version",
        "torch_version",
        "depth",
        "summary",
        "blocks",
        "warnings",
        "source_failures",
    ]
    assert list(report["source_failures"]) == ["repos.json::src::<parse-errors>"]
    summary = report["summary"]
    assert (summary["blocks"], summary["passed"], summary["failed"]) == (3, 2, 1)
    assert summary["categories"] == {"unresolved-name": 1}
    assert summary["stages"]["closed"] == {"passed": 2, "failed": 1}
    assert sorted(summary["sources"]) == ["src", "zoo"]
    broken = report["blocks"][0]
    assert broken["id"] == "src:pkg.layers:Broken"
    assert (broken["outcome"], broken["failed_stage"]) == ("failed", "closed")
    assert broken["category"] == "unresolved-name"
    assert Path(broken["file"]).is_file()
    assert "67% (2/3)" in (pytester.path / "b.svg").read_text()
    endpoint = json.loads((pytester.path / "b.json").read_text())
    assert endpoint["message"] == "67% (2/3)"
    result.stdout.fnmatch_lines([f"nnrag wrote {pytester.path / 'report.json'}"])


def test_cached_rerun_gives_same_outcomes(
    pytester: pytest.Pytester, project: Path, cli: Cli
) -> None:
    first = pytester.runpytest(*cli("--nnrag-report", "first.json"))
    second = pytester.runpytest(*cli("--nnrag-report", "second.json"))
    first.assert_outcomes(passed=2, failed=2)
    second.assert_outcomes(passed=2, failed=2)
    before = json.loads((pytester.path / "first.json").read_text())["blocks"]
    after = json.loads((pytester.path / "second.json").read_text())["blocks"]
    assert [b["cached"] for b in before] == [False, False, False]
    assert [b["cached"] for b in after] == [True, True, True]
    keys = ("id", "outcome", "stage_reached", "category")
    assert [[b[k] for k in keys] for b in before] == [[b[k] for k in keys] for b in after]
    third = pytester.runpytest(*cli("--nnrag-report", "third.json", "--nnrag-revalidate"))
    third.assert_outcomes(passed=2, failed=2)
    again = json.loads((pytester.path / "third.json").read_text())["blocks"]
    assert [b["cached"] for b in again] == [False, False, False]


def test_xdist_same_outcomes_and_one_report(
    pytester: pytest.Pytester, project: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # When this suite itself runs under xdist, the inner run's controller would inherit
    # the outer worker's name: only the inner workers may have one.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    log = pytester.path / "writes.log"
    pytester.makeconftest(
        f"""
        import os
        import nnrag.report

        _write = nnrag.report.write_report

        def write_report(document, path):
            with open({str(log)!r}, "a") as out:
                out.write(os.environ.get("PYTEST_XDIST_WORKER", "controller") + "\\n")
            return _write(document, path)

        nnrag.report.write_report = write_report
        """
    )
    args = cli("-p", "no:cacheprovider", "--nnrag-report", "report.json", "--nnrag-badge", "b.svg")
    result = pytester.runpytest_subprocess(*args, "-n", "2")
    result.assert_outcomes(passed=2, failed=2)
    assert log.read_text().splitlines() == ["controller"]
    assert result.stdout.str().count("nnrag summary") == 1
    result.stdout.fnmatch_lines(["nnrag: 2/3 blocks reached closed*"])
    report = json.loads((pytester.path / "report.json").read_text())
    assert [b["id"] for b in report["blocks"]] == [
        "src:pkg.layers:Broken",
        "src:pkg.layers:Good",
        "zoo:zoo:Tiny",
    ]
    assert report["summary"]["passed"] == 2


# --------------------------------------------------------------------------- fixtures and hooks


def test_fixtures_extract_and_validate(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    pytester.makepyfile(
        test_mine="""
        def test_extract(nnrag_extract):
            extracted = nnrag_extract("src:pkg.layers:Good")
            assert extracted.closed
            assert "def helper" in extracted.code

        def test_validate(nnrag_validate):
            result = nnrag_validate("Broken", depth="closed")
            assert result.category == "unresolved-name"
            assert not result.passed
        """
    )
    result = pytester.runpytest(*cli("-m", "not nnrag"))
    result.assert_outcomes(passed=2, deselected=4)


def test_fixtures_need_repos(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="def test_x(nnrag_index):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*nnrag_workspace fixture needs nnrag to be active*"])


def test_bad_hook_answer_is_reported(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    pytester.makeconftest(
        """
        def pytest_nnrag_block_inputs(block_id, class_name, config):
            return {"shapes": [1]} if class_name == "Tiny" else None
        """
    )
    result = pytester.runpytest(*cli("-k", "Tiny"))
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(
        [
            "*failed at stage instantiate*",
            "category: config",
            "*pytest_nnrag_block_inputs returned*args, input_kwargs*",
        ]
    )


def test_result_hook_sees_every_block(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    pytester.makeconftest(
        """
        def pytest_nnrag_result(item, result):
            item.user_properties.append(("seen", result.block_id))
        """
    )
    pytester.runpytest(*cli("--junitxml", "out.xml"))
    xml = (pytester.path / "out.xml").read_text()
    assert xml.count('<property name="seen"') == 3


def test_source_error_is_a_failing_item(pytester: pytest.Pytester, project: Path) -> None:
    repos = {"sources": [{"name": "gone", "path": "nowhere"}, {"name": "zoo", "path": "zoo_src"}]}
    (pytester.path / "repos.json").write_text(json.dumps(repos))
    result = pytester.runpytest(
        "--nnrag-repos", "repos.json", "--nnrag-cache", ".nnrag-cache", "--nnrag-depth", "closed"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*repos.json::gone::<source-error>*", "*source 'gone' could not be materialized*"],
        consecutive=False,
    )


# --------------------------------------------------------------------------- real validation


@pytest.mark.integration
def test_forward_in_the_sandbox(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    pytester.makeconftest(
        """
        def pytest_nnrag_block_inputs(block_id, class_name, config):
            if class_name == "Good":
                return {"kwargs": {"dim": 3}, "inputs": [{"shape": [2, 3]}]}
            return None
        """
    )
    pytester.makepyfile(  # runs after the blocks: the sandbox's torch stays out of this process
        test_zz_after="""
        import sys

        def test_no_torch_here():
            assert "torch" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess(*cli("--nnrag-report", "r.json", depth="forward"))
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(["repos.json F.F.*", "test_zz_after.py .*"])
    report = json.loads((pytester.path / "r.json").read_text())
    reached = {b["id"]: b["stage_reached"] for b in report["blocks"]}
    assert reached == {
        "src:pkg.layers:Broken": "compile",
        "src:pkg.layers:Good": "forward",
        "zoo:zoo:Tiny": "forward",
    }


NNRAGFILE = """
from pathlib import Path


def nnrag_block_inputs(block_id, class_name):
    if class_name == "Good":
        return {"kwargs": {"dim": 3}, "inputs": [{"shape": [2, 3]}]}
    return None


def nnrag_result(block_id, result):
    with open(Path(__file__).parent / "seen.txt", "a") as out:
        out.write(f"{block_id} {result.passed}\\n")
"""


@pytest.mark.integration
def test_nnragfile_is_seen_by_pytest(pytester: pytest.Pytester, project: Path, cli: Cli) -> None:
    (pytester.path / "nnragfile.py").write_text(NNRAGFILE)
    result = pytester.runpytest_subprocess(*cli("-k", "Good", depth="forward"))
    result.assert_outcomes(passed=1, deselected=3)
    assert (pytester.path / "seen.txt").read_text() == "src:pkg.layers:Good True\n"


@pytest.mark.integration
def test_nnragfile_is_seen_by_the_cli_and_replay_reproduces(
    pytester: pytest.Pytester, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nnrag.cli import main

    (pytester.path / "nnragfile.py").write_text(NNRAGFILE)
    common = ["--repos", str(pytester.path / "repos.json"), "--cache", str(pytester.path / "c")]
    assert main(["replay", "Good", *common]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == ["REPRODUCED src:pkg.layers:Good (pass)"]
    assert "1 of 1 reproduced" in out.err
    assert (pytester.path / "seen.txt").read_text().startswith("src:pkg.layers:Good True")
