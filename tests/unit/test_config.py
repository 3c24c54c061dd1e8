"""repos.json formats, validation messages and settings defaults."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from nnrag.config import load_settings, load_sources
from nnrag.errors import ConfigError

REFERENCE = Path("/work/shared/reference/nn-rag-repo_config.json")


def write(tmp_path: Path, data: object, name: str = "repos.json") -> Path:
    file = tmp_path / name
    file.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return file


def test_list_format_with_every_kind(tmp_path: Path) -> None:
    file = write(
        tmp_path,
        [
            {"name": "local", "path": "src", "paths": ["pkg/*"], "priority": 2},
            {"name": "g", "git": "file:///tmp/repo", "ref": "v1", "exclude": ["*Test*"]},
            {"pypi": "timm==1.0.31", "include": ["timm.layers.*"]},
        ],
    )
    local, git, pypi = load_sources(file)
    assert (local.kind, local.location, local.paths, local.priority) == (
        "path",
        str((tmp_path / "src").resolve()),
        ("pkg/*",),
        2,
    )
    assert (git.kind, git.location, git.ref, git.exclude) == (
        "git",
        "file:///tmp/repo",
        "v1",
        ("*Test*",),
    )
    assert (pypi.name, pypi.kind, pypi.location) == ("timm", "pypi", "timm==1.0.31")
    assert local.entry == 'sources[0] ("local")'
    assert local.config_file == file.resolve()


def test_sources_object_with_global_and_source_hints(tmp_path: Path) -> None:
    file = write(
        tmp_path,
        {
            "sources": [
                {
                    "name": "a",
                    "path": ".",
                    "hints": {
                        "Mlp": {"args": [8], "kwargs": {"hidden": 4}, "inputs": [{"shape": [1, 8]}]}
                    },
                }
            ],
            "hints": {"*:Block": {"input_kwargs": {"mask": None}}},
        },
    )
    (spec,) = load_sources(file)
    own, shared = spec.hints
    assert (own.pattern, own.init_args, dict(own.init_kwargs), own.inputs) == (
        "Mlp",
        (8,),
        {"hidden": 4},
        ({"shape": [1, 8]},),
    )
    assert (shared.pattern, shared.inputs, dict(shared.input_kwargs)) == (
        "*:Block",
        None,
        {"mask": None},
    )


def test_mapping_format_takes_names_from_keys(tmp_path: Path) -> None:
    file = write(tmp_path, {"mine": {"path": "/abs/folder"}, "other": {"pypi": "x==1"}})
    assert [(s.name, s.kind) for s in load_sources(file)] == [("mine", "path"), ("other", "pypi")]


def test_reference_implementation_format_loads_unchanged() -> None:
    specs = load_sources(REFERENCE)
    raw = json.loads(REFERENCE.read_text())
    assert [s.name for s in specs] == list(raw)
    vision = specs[0]
    assert (vision.name, vision.kind, vision.location, vision.priority) == (
        "pytorch/vision",
        "git",
        "https://github.com/pytorch/vision.git",
        1,
    )
    assert vision.paths == tuple(raw["pytorch/vision"]["paths"])


def test_reference_format_pointed_at_local_repository(tmp_path: Path) -> None:
    shutil.copy(REFERENCE, tmp_path / "repo_config.json")
    data = json.loads((tmp_path / "repo_config.json").read_text())
    data["pytorch/vision"]["url"] = "file:///srv/vision.git"
    file = write(tmp_path, data, "repo_config.json")
    assert load_sources(file)[0].location == "file:///srv/vision.git"


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    file = write(tmp_path, '[\n  {"name": "a", "path": "x",}\n]')
    with pytest.raises(ConfigError) as info:
        load_sources(file)
    assert (info.value.line, info.value.col) == (2, 29)
    assert str(info.value).startswith(f"{file}:2:29: malformed JSON")


def test_unknown_key_names_entry_key_and_allowed(tmp_path: Path) -> None:
    file = write(tmp_path, [{"name": "a", "path": "."}, {"name": "b", "path": ".", "pathz": []}])
    with pytest.raises(ConfigError) as info:
        load_sources(file)
    error = info.value
    assert (error.entry, error.key) == ('sources[1] ("b")', "pathz")
    assert "allowed: name, path, git" in str(error)
    assert str(error).startswith(f"{file}: sources[1] (\"b\"): key 'pathz': unknown key")


@pytest.mark.parametrize(
    ("entry", "key", "fragment"),
    [
        ({"name": "a", "path": ".", "paths": "timm"}, "paths", "must be a list, got a string"),
        (
            {"name": "a", "path": ".", "paths": [3]},
            "paths.0",
            "must be a string (every item), got an integer",
        ),
        ({"name": "a", "path": ".", "priority": "high"}, "priority", "must be an integer"),
        ({"name": "a:b", "path": "."}, "name", "is not allowed"),
        ({"name": "a", "path": "", "git": "x"}, "path", "must not be empty"),
        (
            {"name": "a", "path": ".", "hints": {"X": {"argz": []}}},
            "hints.X.argz",
            "allowed: args, kwargs",
        ),
        ({"name": "a", "pypi": "timm=1.0"}, "pypi", "not a valid PEP 508 requirement"),
        ({"name": "a", "path": ".", "ref": "main"}, "ref", "only allowed with 'git'"),
    ],
)
def test_bad_values_are_located(
    tmp_path: Path, entry: dict[str, object], key: str, fragment: str
) -> None:
    file = write(tmp_path, [entry])
    with pytest.raises(ConfigError) as info:
        load_sources(file)
    assert info.value.key == key
    assert fragment in str(info.value)
    assert info.value.file == str(file)


@pytest.mark.parametrize("entry", [{"name": "a"}, {"name": "a", "path": ".", "pypi": "x"}])
def test_exactly_one_location(tmp_path: Path, entry: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="needs exactly one of 'path'"):
        load_sources(write(tmp_path, [entry]))


def test_duplicate_names_rejected(tmp_path: Path) -> None:
    file = write(tmp_path, [{"name": "a", "path": "."}, {"name": "a", "pypi": "x==1"}])
    with pytest.raises(ConfigError, match=r"duplicate source name 'a' \(also used by sources\[0\]"):
        load_sources(file)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (42, "expected a list of sources"),
        ([42], "a source must be an object"),
        ({"sources": [], "extra": 1}, "unknown top-level key 'extra'"),
    ],
)
def test_wrong_shapes(tmp_path: Path, data: object, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_sources(write(tmp_path, data))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_sources(tmp_path / "nope.json")


def test_error_pickles(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_sources(write(tmp_path, "{"))
    clone = pickle.loads(pickle.dumps(info.value))
    assert (str(clone), clone.line, clone.col) == (str(info.value), 1, 2)


def test_cache_dir_precedence(tmp_path: Path) -> None:
    file = write(tmp_path, [{"name": "a", "path": "."}])
    env = {"NNRAG_CACHE_DIR": str(tmp_path / "env")}
    assert (
        load_settings(file, cache_dir=tmp_path / "flag", environ=env).cache_dir == tmp_path / "flag"
    )
    assert load_settings(file, environ=env).cache_dir == tmp_path / "env"
    assert "nnrag" in load_settings(file, environ={}).cache_dir.parts


def test_repos_file_from_environment_and_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = write(tmp_path, [{"name": "a", "path": "."}])
    monkeypatch.chdir(tmp_path)
    settings = load_settings(None, environ={"NNRAG_REPOS": str(file)}, depth="backward", jobs=1)
    assert (settings.repos_file, settings.depth, settings.jobs) == (file.resolve(), "backward", 1)
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings(file, environ={}, colour=True)
    with pytest.raises(ConfigError, match="unknown depth"):
        load_settings(file, environ={}, depth="deep")


def test_no_repos_file_means_no_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings(None, environ={})
    assert (settings.sources, settings.repos_file) == ((), None)
    write(tmp_path, [{"name": "a", "path": "."}])
    assert [s.name for s in load_settings(None, environ={}).sources] == ["a"]


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "a", "path": "."},
        {"name": "a", "git": "x", "ref": "main", "paths": ["m"], "hints": {"X": {"args": [1]}}},
        {"name": "a", "path": ".", "paths": "timm"},
        {"name": "a", "path": ".", "pathz": []},
        {"name": "a:b", "path": "."},
        {"name": "a", "path": ""},
        {"name": "a", "path": ".", "hints": {"X": {"argz": []}}},
        {"name": "a", "path": ".", "priority": True},
    ],
)
def test_builtin_validator_agrees_with_jsonschema(entry: dict[str, object]) -> None:
    import jsonschema

    from nnrag.config import SOURCE_SCHEMA, _first_error

    expected = jsonschema.Draft202012Validator(SOURCE_SCHEMA).is_valid(entry)
    assert (_first_error(entry, SOURCE_SCHEMA, ()) is None) is expected
