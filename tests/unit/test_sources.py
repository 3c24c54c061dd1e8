"""Scoping source trees and materializing path, git (file://) and pypi (local wheels) sources."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from nnrag.errors import SourceError
from nnrag.model import SourceSpec
from nnrag.sources.fetch import MARKER, _unpack, materialize
from nnrag.sources.licenses import license_from_text, license_of
from nnrag.sources.scan import in_scope, scan_tree

MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy"


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        file = root / name
        file.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            file.write_bytes(content)
        else:
            file.write_text(content, encoding="utf-8")
    return root


# --------------------------------------------------------------------------- scope


@pytest.mark.parametrize(
    ("path", "patterns", "expected"),
    [
        ("timm/layers/mlp.py", (), True),
        ("timm/layers/mlp.py", ("timm",), True),
        ("timm/layers/mlp.py", ("timm/layers/",), True),
        ("timmy/x.py", ("timm",), False),
        ("torchvision/_utils.py", ("torchvision/_utils.py",), True),
        ("torchvision/utils.py", ("torchvision/_utils.py",), False),
        ("a/models/b/c.py", ("a/*/b",), True),
        ("a/models/c.py", ("a/*/b",), False),
        ("pkg/test_x.py", ("pkg/test_*.py",), True),
        ("x.py", (".",), True),
        ("timm/a.py", ("./timm/",), True),
    ],
)
def test_in_scope(path: str, patterns: tuple[str, ...], expected: bool) -> None:
    assert in_scope(path, patterns) is expected


def test_scan_tree_selects_python_files_in_scope(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "",
            "pkg/data.json": "{}",
            "pkg/__pycache__/a.cpython-311.py": "",
            ".hidden/b.py": "",
            "other/c.py": "",
        },
    )
    entries, problems = scan_tree(tmp_path, source="s")
    assert [e.path for e in entries] == ["other/c.py", "pkg/__init__.py", "pkg/a.py"]
    assert problems == []
    entries, _ = scan_tree(tmp_path, source="s", paths=["pkg"])
    assert [e.path for e in entries] == ["pkg/__init__.py", "pkg/a.py"]


def test_symlink_loop_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    make_tree(tmp_path, {"pkg/__init__.py": "", "pkg/sub/m.py": ""})
    (tmp_path / "pkg" / "sub" / "back").symlink_to(tmp_path / "pkg")
    (tmp_path / "pkg" / "self.py").symlink_to(tmp_path / "pkg" / "self.py")
    entries, problems = scan_tree(tmp_path, source="s")
    assert [e.path for e in entries] == ["pkg/__init__.py", "pkg/sub/m.py"]
    messages = {p.path: p.message for p in problems}
    assert messages["pkg/sub/back"].startswith("symlink loop")
    assert messages["pkg/self.py"].startswith("symlink loop")


def test_generated_5mb_file_is_skipped_with_a_problem(tmp_path: Path) -> None:
    big = "x = [" + "1, " * (5 * 1024 * 1024 // 3) + "]\n"
    make_tree(tmp_path, {"gen.py": big, "ok.py": "y = 1\n"})
    entries, problems = scan_tree(tmp_path, source="s")
    assert [e.path for e in entries] == ["ok.py"]
    (problem,) = problems
    assert (problem.source, problem.path) == ("s", "gen.py")
    assert "too large (5.2 MB > 2.1 MB), generated? skipped" in problem.message


# --------------------------------------------------------------------------- path


def test_path_source_revision_is_a_content_hash(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "src", {"pkg/__init__.py": "", "pkg/a.py": "x = 1\n"})
    (root / "LICENSE").write_text(MIT)
    spec = SourceSpec(name="s", kind="path", location=str(root))
    first = materialize(spec, tmp_path / "cache")
    assert (first.root, first.origin, first.license) == (root, str(root), "MIT")
    assert materialize(spec, tmp_path / "cache").revision == first.revision
    (root / "pkg" / "a.py").write_text("x = 2\n")
    assert materialize(spec, tmp_path / "cache").revision != first.revision
    assert not (tmp_path / "cache").exists()  # a local folder is used in place


def test_path_source_reuses_known_hashes_for_unchanged_files(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "src", {"a.py": "x = 1\n"})
    spec = SourceSpec(name="s", kind="path", location=str(root))
    info = (root / "a.py").stat()
    memo = {"a.py": (info.st_size, info.st_mtime_ns, "0" * 40)}
    fresh = materialize(spec, tmp_path / "cache").revision
    assert materialize(spec, tmp_path / "cache", known=memo).revision != fresh


def test_missing_folder(tmp_path: Path) -> None:
    spec = SourceSpec(name="s", kind="path", location=str(tmp_path / "gone"), entry="sources[0]")
    with pytest.raises(SourceError, match=r"folder does not exist; fix 'path'") as info:
        materialize(spec, tmp_path / "cache")
    assert info.value.source == "s"


def test_empty_source(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "src", {"README.md": "", "pkg/x.py": ""})
    spec = SourceSpec(name="s", kind="path", location=str(root), paths=("models",))
    with pytest.raises(SourceError, match=r"no \.py files under paths \['models'\]"):
        materialize(spec, tmp_path / "cache")


# --------------------------------------------------------------------------- git


def git(*args: str, cwd: Path) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t")
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_tree(
        tmp_path / "repo",
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "A = 1\n",
            "tools/t.py": "T = 1\n",
            "LICENSE": MIT,
            "weights/model.bin": "\0" * 64,
        },
    )
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "one", cwd=root)
    git("tag", "v1", cwd=root)
    return root


def test_git_checkout_holds_every_python_file_and_the_licence(repo: Path, tmp_path: Path) -> None:
    """``paths`` choose the blocks, not what a closure may import: ``tools/t.py`` lies outside
    them and is checked out; data files are not."""
    spec = SourceSpec(name="g", kind="git", location=repo.as_uri(), paths=("pkg",))
    checkout = materialize(spec, tmp_path / "cache")
    head = git("rev-parse", "HEAD", cwd=repo)
    assert (checkout.revision, checkout.origin, checkout.license) == (head, repo.as_uri(), "MIT")
    files = sorted(
        str(p.relative_to(checkout.root)) for p in checkout.root.rglob("*") if p.is_file()
    )
    assert files == ["LICENSE", "pkg/__init__.py", "pkg/a.py", "tools/t.py"]
    assert not (checkout.root / ".git").exists()
    assert (checkout.root.parent / MARKER).is_file()


def test_git_ref_that_moved_is_refetched(repo: Path, tmp_path: Path) -> None:
    spec = SourceSpec(name="g", kind="git", location=repo.as_uri(), ref="main")
    first = materialize(spec, tmp_path / "cache")
    assert materialize(spec, tmp_path / "cache").root == first.root
    (repo / "pkg" / "a.py").write_text("A = 2\n")
    git("commit", "-q", "-am", "two", cwd=repo)
    second = materialize(spec, tmp_path / "cache")
    assert second.revision == git("rev-parse", "HEAD", cwd=repo) != first.revision
    assert (second.root / "pkg" / "a.py").read_text() == "A = 2\n"
    assert not first.root.exists()  # the superseded checkout is removed


def test_git_tag_and_full_commit(repo: Path, tmp_path: Path) -> None:
    first = git("rev-parse", "HEAD", cwd=repo)
    (repo / "pkg" / "a.py").write_text("A = 2\n")
    git("commit", "-q", "-am", "two", cwd=repo)
    tag = materialize(
        SourceSpec(name="g", kind="git", location=repo.as_uri(), ref="v1"), tmp_path / "c"
    )
    assert tag.revision == first
    by_commit = materialize(
        SourceSpec(name="g", kind="git", location=repo.as_uri(), ref=first), tmp_path / "c2"
    )
    assert by_commit.revision == first
    assert (by_commit.root / "pkg" / "a.py").read_text() == "A = 1\n"


@pytest.mark.parametrize("ref", ["HEAD", "refs/heads/main", "refs/tags/v1"])
def test_git_refs_that_are_not_branch_or_tag_names(repo: Path, tmp_path: Path, ref: str) -> None:
    """``git clone --branch`` takes only a branch or tag name; other refs are fetched by commit."""
    checkout = materialize(
        SourceSpec(name="g", kind="git", location=repo.as_uri(), ref=ref), tmp_path / "cache"
    )
    assert checkout.revision == git("rev-parse", "HEAD", cwd=repo)
    assert (checkout.root / "pkg" / "a.py").read_text() == "A = 1\n"


@pytest.mark.parametrize("ref", ["nope", "abc1234"])
def test_git_unknown_ref(repo: Path, tmp_path: Path, ref: str) -> None:
    spec = SourceSpec(name="g", kind="git", location=repo.as_uri(), ref=ref)
    with pytest.raises(
        SourceError,
        match=r"names no branch, tag or other ref .* commit; fix 'ref' in repos\.json \(",
    ):
        materialize(spec, tmp_path / "cache")


def test_git_unclonable_url_reports_git_stderr(tmp_path: Path) -> None:
    spec = SourceSpec(name="g", kind="git", location=(tmp_path / "no-such-repo").as_uri())
    with pytest.raises(SourceError, match="cannot reach the repository: fatal:") as info:
        materialize(spec, tmp_path / "cache")
    assert info.value.location == spec.location


def test_git_empty_source(repo: Path, tmp_path: Path) -> None:
    spec = SourceSpec(name="g", kind="git", location=repo.as_uri(), paths=("docs",))
    with pytest.raises(SourceError, match=r"no \.py files"):
        materialize(spec, tmp_path / "cache")
    leftovers = [
        p.name for p in next((tmp_path / "cache" / "checkouts" / "git").iterdir()).iterdir()
    ]
    assert leftovers == [".lock"]


def test_partial_checkout_from_a_killed_process_is_not_used(repo: Path, tmp_path: Path) -> None:
    spec = SourceSpec(name="g", kind="git", location=repo.as_uri())
    checkout = materialize(spec, tmp_path / "cache")
    parent = checkout.root.parent.parent
    (checkout.root.parent / MARKER).unlink()  # as if killed before publishing
    (parent / ".tmp-killed").mkdir()
    again = materialize(spec, tmp_path / "cache")
    assert (again.root.parent / MARKER).is_file()
    assert not (parent / ".tmp-killed").exists()


# --------------------------------------------------------------------------- pypi


def build_wheel(folder: Path, name: str = "tinypkg", version: str = "1.2.0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr(f"{name}/__init__.py", "from .mod import A\n")
        zipped.writestr(f"{name}/mod.py", "class A:\n    pass\n")
        zipped.writestr(f"{name}/kernel.so", b"\0ELF")
        zipped.writestr(
            f"{info}/METADATA",
            f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n"
            "License-Expression: BSD-3-Clause\n\n",
        )
        zipped.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zipped.writestr(f"{info}/RECORD", "")
    return wheel


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    links = tmp_path / "wheels"
    build_wheel(links)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links


def test_pypi_wheel_is_unpacked_to_python_sources(local_index: Path, tmp_path: Path) -> None:
    spec = SourceSpec(name="t", kind="pypi", location="tinypkg==1.2.0")
    checkout = materialize(spec, tmp_path / "cache")
    assert (checkout.revision, checkout.origin, checkout.license) == (
        "1.2.0",
        "tinypkg==1.2.0",
        "BSD-3-Clause",
    )
    kept = sorted(
        str(p.relative_to(checkout.root)) for p in checkout.root.rglob("*") if p.is_file()
    )
    assert kept == ["tinypkg-1.2.0.dist-info/METADATA", "tinypkg/__init__.py", "tinypkg/mod.py"]
    # a second run reuses the finished checkout without calling pip
    os.environ["PIP_FIND_LINKS"] = str(tmp_path / "nowhere")
    assert materialize(spec, tmp_path / "cache") == checkout


def test_pypi_nonexistent_requirement(local_index: Path, tmp_path: Path) -> None:
    spec = SourceSpec(name="t", kind="pypi", location="tinypkg==9.9")
    with pytest.raises(SourceError, match="no distribution matches the requirement") as info:
        materialize(spec, tmp_path / "cache")
    assert "tinypkg==9.9" in str(info.value)
    assert not list((tmp_path / "cache" / "checkouts" / "pypi").glob(".tmp-*"))


def _tar(archive: Path, files: dict[str, str]) -> None:
    with tarfile.open(archive, "w:gz") as tarred:
        for name, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tarred.addfile(member, io.BytesIO(data))


BACKEND = r"""
import os

import helperdep  # the build requirement: importable only if pip installed it


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, "sdpkg-0.1.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as out:
        out.write("Metadata-Version: 2.1\nName: sdpkg\nVersion: 0.1\n")
    return "sdpkg-0.1.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise NotImplementedError
"""


def test_an_sdist_whose_build_requirements_are_wheels_only_is_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the source itself comes from source: pip preparing its metadata installs the
    build requirements as wheels (building numpy or torch from source would never end)."""
    links = tmp_path / "links"
    build_wheel(links, name="helperdep", version="1.0")
    _tar(
        links / "sdpkg-0.1.tar.gz",
        {
            "sdpkg-0.1/PKG-INFO": "Metadata-Version: 2.1\nName: sdpkg\nVersion: 0.1\n",
            "sdpkg-0.1/pyproject.toml": '[build-system]\nrequires = ["helperdep"]\n'
            'build-backend = "backend"\nbackend-path = ["."]\n',
            "sdpkg-0.1/backend.py": BACKEND,
            "sdpkg-0.1/sdpkg/__init__.py": "class A:\n    pass\n",
        },
    )
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    spec = SourceSpec(name="s", kind="pypi", location="sdpkg==0.1")
    checkout = materialize(spec, tmp_path / "cache")
    assert (checkout.root / "sdpkg" / "__init__.py").is_file()
    assert checkout.revision == "0.1"


def test_sdist_with_src_layout_is_unpacked(tmp_path: Path) -> None:
    archive = tmp_path / "demo-0.1.tar.gz"
    with tarfile.open(archive, "w:gz") as tarred:
        for name, text in {
            "demo-0.1/PKG-INFO": "Metadata-Version: 2.1\nName: demo\nVersion: 0.1\n",
            "demo-0.1/LICENSE": MIT,
            "demo-0.1/setup.py": "",
            "demo-0.1/src/demo/__init__.py": "",
            "demo-0.1/docs/conf.txt": "",
        }.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tarred.addfile(member, io.BytesIO(data))
    root = _unpack(archive, tmp_path / "out")
    assert root == "demo-0.1/src"
    assert (tmp_path / "out" / root / "demo" / "__init__.py").is_file()
    assert not (tmp_path / "out" / "demo-0.1" / "docs").exists()
    assert license_of(tmp_path / "out") == "MIT"


@pytest.mark.integration
def test_pypi_real_download(tmp_path: Path) -> None:
    spec = SourceSpec(name="six", kind="pypi", location="six==1.16.0")
    try:
        checkout = materialize(spec, tmp_path / "cache")
    except SourceError as error:  # pragma: no cover - depends on the network
        pytest.skip(f"no package index reachable: {error}")
    assert (checkout.revision, checkout.license) == ("1.16.0", "MIT")
    assert (checkout.root / "six.py").is_file()


# --------------------------------------------------------------------------- licenses


@pytest.mark.parametrize(
    ("text", "spdx"),
    [
        (MIT, "MIT"),
        ("Apache License\n Version 2.0, January 2004\n", "Apache-2.0"),
        (
            "Redistribution and use in source and binary forms... Neither the name of",
            "BSD-3-Clause",
        ),
        ("All rights reserved.", None),
    ],
)
def test_license_from_text(text: str, spdx: str | None) -> None:
    assert license_from_text(text) == spdx


def test_license_from_classifier(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "x-1.dist-info/METADATA": "Name: x\n"
            "Classifier: License :: OSI Approved :: Apache Software License\n\n"
        },
    )
    assert license_of(tmp_path) == "Apache-2.0"


def test_paths_entry_that_matches_nothing_is_reported(tmp_path: Path) -> None:
    make_tree(tmp_path, {"pkg/a.py": ""})
    entries, problems = scan_tree(tmp_path, source="s", paths=["pkg", "pkg/gone.py", "nothing/*"])
    assert [e.path for e in entries] == ["pkg/a.py"]
    assert [p.path for p in problems] == ["nothing/*", "pkg/gone.py"]
    assert "matches no .py file" in problems[0].message


def test_packages_above_scoped_paths_keep_their_init(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {"a/__init__.py": "", "a/b/__init__.py": "", "a/b/m.py": "", "a/c/n.py": "", "a/x.py": ""},
    )
    entries, _ = scan_tree(tmp_path, source="s", paths=["a/b/m.py"])
    assert [e.path for e in entries] == ["a/__init__.py", "a/b/__init__.py", "a/b/m.py"]


def test_git_paths_scan_keeps_package_names(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path / "repo",
        {
            "tv/__init__.py": "",
            "tv/models/__init__.py": "",
            "tv/models/net.py": "",
            "tv/io/x.py": "",
            "tv/_utils.py": "",
        },
    )
    git("init", "-q", "-b", "main", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "one", cwd=root)
    spec = SourceSpec(
        name="g", kind="git", location=root.as_uri(), paths=("tv/models", "tv/_utils.py")
    )
    checkout = materialize(spec, tmp_path / "cache")
    entries, _ = scan_tree(checkout.root, source="g", paths=spec.paths)
    assert [e.path for e in entries] == [
        "tv/__init__.py",
        "tv/_utils.py",
        "tv/models/__init__.py",
        "tv/models/net.py",
    ]
    assert (checkout.root / "tv" / "io" / "x.py").is_file()  # a closure may import it


def test_git_unreachable_later_reuses_the_last_checkout(repo: Path, tmp_path: Path) -> None:
    spec = SourceSpec(name="g", kind="git", location=repo.as_uri())
    first = materialize(spec, tmp_path / "cache")
    repo.rename(tmp_path / "moved")
    assert materialize(spec, tmp_path / "cache") == first


def test_vague_license_field_defers_to_the_license_text(tmp_path: Path) -> None:
    bsd2 = "Redistribution and use in source and binary forms ... this list of conditions"
    make_tree(
        tmp_path,
        {"x-1.dist-info/METADATA": "Name: x\nLicense: BSD\n\n", "x-1.dist-info/LICENSE": bsd2},
    )
    assert license_of(tmp_path) == "BSD-2-Clause"
    make_tree(tmp_path, {"x-1.dist-info/METADATA": "Name: x\nLicense: Apache-2.0\n\n"})
    assert license_of(tmp_path) == "Apache-2.0"
