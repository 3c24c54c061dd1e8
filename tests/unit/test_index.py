"""The index: index_tree, Index look-ups, incremental builds, bad files, recovery, concurrency."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from nnrag.config import load_settings
from nnrag.errors import CacheError
from nnrag.index.build import Index, build_index, index_tree, load_index
from nnrag.index.store import db_path
from nnrag.model import Checkout, ModuleInfo, Settings, SourceSpec
from nnrag.report import format_diagnostic


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        file = root / name
        file.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            file.write_bytes(content)
        else:
            file.write_text(content, encoding="utf-8")
    return root


TREE: dict[str, str | bytes] = {
    "pkg/__init__.py": "from .layers import Mlp\n",
    "pkg/layers.py": (
        "import torch.nn as nn\n\n\n"
        "class Mlp(nn.Module):\n    def forward(self, x):\n        return x\n"
    ),
    "pkg/sub/__init__.py": "",
    "pkg/sub/util.py": "# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n".encode("latin-1"),
    "tool.py": "X = 1\r\nY = 2\r\n",
}


# --------------------------------------------------------------------------- index_tree / Index


def test_index_tree_modules_text_and_packages(tmp_path: Path) -> None:
    index = index_tree(make_tree(tmp_path, TREE))
    assert [m.module for m in index.modules()] == [
        "pkg",
        "pkg.layers",
        "pkg.sub",
        "pkg.sub.util",
        "tool",
    ]
    assert index.problems == ()
    layers = index.module("pkg.layers")
    assert layers is not None
    assert (layers.source, layers.path, layers.is_package) == ("src", "pkg/layers.py", False)
    assert index.text(layers) == TREE["pkg/layers.py"]
    util = index.module("pkg.sub.util")
    assert util is not None
    assert "café" in index.text(util)
    assert index.text(index.module("tool")) == "X = 1\r\nY = 2\r\n"  # type: ignore[arg-type]  # module() may return None; the test indexed it
    assert index.source_packages("src") == frozenset({"pkg", "tool"})
    assert index.source_of_module("pkg.layers.Mlp") == "src"
    assert index.source_of_module("torch.nn") is None
    assert index.module("missing") is None
    checkout = index.checkouts["src"]
    assert (checkout.spec.kind, checkout.root) == ("path", tmp_path.resolve())


def test_index_tree_records_bad_files(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "ok.py": "x = 1\n",
            "broken.py": "def f(:\n",
            "binary.py": b"x = '\xff\xfe'\n",
        },
    )
    index = index_tree(tmp_path, source="s")
    assert [m.module for m in index.modules()] == ["ok"]
    problems = {p.path: p for p in index.problems}
    assert set(problems) == {"binary.py", "broken.py"}
    assert problems["broken.py"].line == 1
    assert problems["broken.py"].message.startswith("syntax error")
    assert "cannot decode" in problems["binary.py"].message
    assert problems["broken.py"].code == "NNR403"
    assert problems["binary.py"].code == "NNR402"
    assert format_diagnostic(problems["broken.py"]).startswith("broken.py:1:7: NNR403 syntax error")


def info(source: str, module: str) -> ModuleInfo:
    return ModuleInfo(
        source=source, module=module, path=module.replace(".", "/") + ".py", sha1="0" * 40
    )


def checkout(name: str, priority: int) -> Checkout:
    spec = SourceSpec(name=name, kind="path", location=f"/{name}", priority=priority)
    return Checkout(spec=spec, root=Path(f"/{name}"), revision="r", origin=f"/{name}")


def test_module_prefers_same_source_then_priority() -> None:
    index = Index(
        checkouts={"late": checkout("late", 2), "early": checkout("early", 1)},
        modules=[info("late", "utils.x"), info("early", "utils.x"), info("late", "only.y")],
    )
    assert index.sources == ("early", "late")
    assert [(m.source, m.module) for m in index.modules()] == [
        ("early", "utils.x"),
        ("late", "only.y"),
        ("late", "utils.x"),
    ]
    assert [m.module for m in index.modules("late")] == ["only.y", "utils.x"]
    assert index.module("utils.x").source == "early"  # type: ignore[union-attr]  # module() may return None; the test indexed it
    assert index.module("utils.x", prefer="late").source == "late"  # type: ignore[union-attr]  # module() may return None; the test indexed it
    assert index.source_of_module("utils") == "early"
    assert index.source_of_module("only.y.z") == "late"


def test_analyses_are_made_once_per_index_and_not_shared() -> None:
    from nnrag.extract.needs import scanner_for
    from nnrag.index.symbols import symbols_for

    def make() -> Index:
        return Index(checkouts={"s": checkout("s", 1)}, modules=[info("s", "pkg.mod")])

    first, second = make(), make()
    made: list[int] = []
    assert first.analyses.of(list, lambda: made.append(1) or [1]) == [1]
    assert first.analyses.of(list, lambda: made.append(2) or [2]) == [1]  # kept, not remade
    assert made == [1]
    assert symbols_for(first) is symbols_for(first)
    assert symbols_for(first) is not symbols_for(second)
    assert scanner_for(first) is scanner_for(first)
    assert scanner_for(second).index is second


# --------------------------------------------------------------------------- build / load


def settings_for(tmp_path: Path, sources: list[dict[str, object]], **overrides: object) -> Settings:
    tmp_path.mkdir(parents=True, exist_ok=True)
    repos = tmp_path / "repos.json"
    repos.write_text(json.dumps(sources))
    return load_settings(repos, cache_dir=tmp_path / "cache", environ={}, **overrides)


def test_incremental_reindex_touches_only_the_changed_file(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src", TREE)
    settings = settings_for(tmp_path, [{"name": "a", "path": "src"}])
    cold = build_index(settings)
    assert (cold.sources, cold.files, cold.modules, cold.parsed) == (1, 5, 5, 5)
    assert cold.lines == sum(m.lines for m in load_index(settings).modules())
    assert build_index(settings).parsed == 0
    (src / "pkg" / "layers.py").write_text("Z = 3\n")
    changed = build_index(settings)
    assert (changed.files, changed.parsed) == (5, 1)
    index = load_index(settings)
    layers = index.module("pkg.layers")
    assert layers is not None
    assert index.text(layers) == "Z = 3\n"
    (src / "extra.py").write_text("E = 1\n")
    (src / "tool.py").unlink()
    moved = build_index(settings)
    assert (moved.files, moved.parsed) == (5, 1)
    assert [m.module for m in load_index(settings).modules()] == [
        "extra",
        "pkg",
        "pkg.layers",
        "pkg.sub",
        "pkg.sub.util",
    ]


def test_same_content_is_analyzed_once(tmp_path: Path) -> None:
    make_tree(tmp_path / "one", {"m.py": "A = 1\n"})
    make_tree(tmp_path / "two", {"m.py": "A = 1\n"})
    settings = settings_for(
        tmp_path, [{"name": "one", "path": "one"}, {"name": "two", "path": "two"}]
    )
    assert build_index(settings).parsed == 1
    assert [m.source for m in load_index(settings).modules()] == ["one", "two"]


def test_bad_inputs_are_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    src = make_tree(
        tmp_path / "src",
        {
            "ok.py": "x = 1\n",
            "broken.py": "class X(\n",
            "binary.py": b"\xff\xfe\x00garbage",
            "gen.py": "T = (" + "0," * (5 * 1024 * 1024 // 2) + ")\n",
            "pkg/__init__.py": "",
        },
    )
    (src / "pkg" / "loop").symlink_to(src)
    make_tree(tmp_path / "empty", {"README.md": "nothing here"})
    settings = settings_for(
        tmp_path,
        [
            {"name": "good", "path": "src"},
            {"name": "gone", "path": "missing"},
            {"name": "empty", "path": "empty"},
        ],
    )
    stats = build_index(settings)
    assert (stats.sources, stats.modules) == (1, 2)
    assert len(stats.source_errors) == 2
    assert "source 'gone'" in stats.source_errors[0]
    assert "folder does not exist" in stats.source_errors[0]
    assert "no .py files" in stats.source_errors[1]
    assert stats.unfetched == {"gone": stats.source_errors[0], "empty": stats.source_errors[1]}
    found = {p.path: p.message for p in stats.problems}
    assert set(found) == {"binary.py", "broken.py", "gen.py", "pkg/loop"}
    assert found["gen.py"].startswith("too large")
    assert found["pkg/loop"].startswith("symlink loop")
    assert {p.path for p in load_index(settings).problems} == set(found)


def test_text_falls_back_to_the_stored_copy(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src", {"m.py": "A = 1\n"})
    settings = settings_for(tmp_path, [{"name": "a", "path": "src"}])
    build_index(settings)
    index = load_index(settings)
    (src / "m.py").write_text("A = 2  # edited after indexing\n")
    module = index.module("m")
    assert module is not None
    assert index.text(module) == "A = 1\n"


def test_database_damaged_between_runs_recovers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tree(tmp_path / "src", TREE)
    settings = settings_for(tmp_path, [{"name": "a", "path": "src"}])
    build_index(settings)
    path = db_path(settings.cache_dir)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(path.read_bytes()[: os.path.getsize(path) // 3])  # killed mid-write
    with pytest.raises(CacheError, match="run `nnrag index`"):
        load_index(settings)
    stats = build_index(settings)
    assert (stats.modules, stats.parsed) == (5, 5)
    assert "rebuilding it" in capsys.readouterr().err
    assert len(list(load_index(settings).modules())) == 5


def test_load_without_index(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, [{"name": "a", "path": "src"}])
    with pytest.raises(CacheError, match="run `nnrag index` first"):
        load_index(settings)


def many_files(root: Path, count: int) -> Path:
    files: dict[str, str | bytes] = {"big/__init__.py": ""}
    for i in range(count):
        files[f"big/m{i:03}.py"] = (
            f"from . import m{(i + 1) % count:03}\n\n\ndef f{i}(x):\n    return x + {i}\n"
        )
    return make_tree(root, files)


def test_parallel_parse_matches_serial(tmp_path: Path) -> None:
    many_files(tmp_path / "src", 60)
    serial = settings_for(tmp_path / "s", [{"name": "a", "path": str(tmp_path / "src")}], jobs=1)
    parallel = settings_for(tmp_path / "p", [{"name": "a", "path": str(tmp_path / "src")}], jobs=2)
    assert build_index(serial).parsed == build_index(parallel).parsed == 61
    assert list(load_index(serial).modules()) == list(load_index(parallel).modules())


def _build_in_child(settings: Settings) -> int:
    return build_index(settings).modules


def test_two_processes_indexing_at_once_agree(tmp_path: Path) -> None:
    many_files(tmp_path / "src", 30)
    settings = settings_for(tmp_path, [{"name": "a", "path": "src"}], jobs=1)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        counts = pool.map(_build_in_child, [settings, settings])
    assert counts == [31, 31]
    index = load_index(settings)
    assert len(list(index.modules())) == 31
    assert build_index(settings).parsed == 0


def test_content_no_file_refers_to_is_dropped(tmp_path: Path) -> None:
    import sqlite3

    src = make_tree(tmp_path / "src", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    settings = settings_for(tmp_path, [{"name": "a", "path": "src"}])
    build_index(settings)
    (src / "a.py").write_text("A = 2\n")
    (src / "b.py").unlink()
    build_index(settings)
    with sqlite3.connect(db_path(settings.cache_dir)) as db:
        assert db.execute("SELECT count(*) FROM blobs").fetchone() == (1,)
        assert db.execute("SELECT count(*) FROM analyses").fetchone() == (1,)


def test_cli_index_summary_json_and_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nnrag.cli import main

    make_tree(tmp_path / "src", {"ok.py": "x = 1\n", "bad.py": "def (:\n"})
    repos = tmp_path / "repos.json"
    repos.write_text(json.dumps([{"name": "a", "path": "src"}]))
    cache = str(tmp_path / "cache")
    assert main(["index", "--repos", str(repos), "--cache", cache]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"{(tmp_path / 'src' / 'bad.py').resolve()}:1:")
    assert "syntax error" in out
    assert "1 of 1 sources, 2 files (2 parsed), 1 modules" in err
    assert main(["index", "--repos", str(repos), "--cache", cache, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["files"], summary["parsed"], summary["modules"]) == (2, 0, 1)
    assert [p["line"] for p in summary["problems"]] == [1]
    repos.write_text(json.dumps([{"name": "a", "path": "src"}, {"name": "b", "path": "nope"}]))
    assert main(["index", "--repos", str(repos), "--cache", cache]) == 1
    assert "error: source 'b'" in capsys.readouterr().err
    repos.write_text("[{]")
    assert main(["index", "--repos", str(repos), "--cache", cache]) == 2
    assert f"{repos}:1:3: malformed JSON" in capsys.readouterr().err


def test_reference_repo_config_indexes_a_local_repository(tmp_path: Path) -> None:
    import subprocess

    reference = json.loads(Path("/work/shared/reference/nn-rag-repo_config.json").read_text())
    vision = make_tree(
        tmp_path / "vision",
        {
            "torchvision/__init__.py": "",
            "torchvision/models/__init__.py": "from .net import Net\n",
            "torchvision/models/net.py": "import torch.nn as nn\n\n\nclass Net(nn.Module): ...\n",
            "torchvision/_utils.py": "U = 1\n",
            "torchvision/datasets/d.py": "D = 1\n",
        },
    )
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", *args], cwd=vision, env=env, check=True)
    config = {
        "pytorch/vision": dict(reference["pytorch/vision"], url=vision.as_uri()),
        "huggingface/pytorch-image-models": dict(
            reference["huggingface/pytorch-image-models"], url=(tmp_path / "gone").as_uri()
        ),
    }
    repos = tmp_path / "repo_config.json"
    repos.write_text(json.dumps(config))
    settings = load_settings(repos, cache_dir=tmp_path / "cache", environ={})
    stats = build_index(settings)
    assert stats.sources == 1
    assert len(stats.source_errors) == 1
    assert "huggingface/pytorch-image-models" in stats.source_errors[0]
    index = load_index(settings)
    assert [m.module for m in index.modules("pytorch/vision")] == [
        "torchvision",
        "torchvision._utils",
        "torchvision.models",
        "torchvision.models.net",
    ]
    assert index.checkouts["pytorch/vision"].spec.priority == 1


def test_unwritable_cache_is_a_clear_error(tmp_path: Path) -> None:
    make_tree(tmp_path / "src", {"a.py": "A = 1\n"})
    (tmp_path / "blocked").write_text("a file where the cache folder should be")
    repos = tmp_path / "repos.json"
    repos.write_text(json.dumps([{"name": "a", "path": "src"}]))
    settings = load_settings(repos, cache_dir=tmp_path / "blocked" / "cache", environ={})
    with pytest.raises(CacheError, match=r"cannot use the cache folder .*pass --cache DIR"):
        build_index(settings)


def test_process_killed_mid_build_leaves_a_usable_cache(tmp_path: Path) -> None:
    import signal
    import time

    many_files(tmp_path / "src", 120)
    settings = settings_for(tmp_path, [{"name": "a", "path": "src"}], jobs=1)
    child = multiprocessing.get_context("spawn").Process(target=_build_in_child, args=(settings,))
    child.start()
    time.sleep(1.0)
    os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]  # pid is int | None before start(); the child was started
    child.join()
    stats = build_index(settings)
    assert stats.modules == 121
    assert len(list(load_index(settings).modules())) == 121


def test_progress_bar_names_the_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_tree(tmp_path / "src", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    settings = settings_for(tmp_path, [{"name": "mine", "path": "src"}])
    assert build_index(settings, progress=True).parsed == 2
    assert "indexing mine" in capsys.readouterr().err
