"""nnrag's plugin manager: nnragfile.py, unmarked hooks, misspelt hooks, plain-data answers."""

from __future__ import annotations

import textwrap
import types
from pathlib import Path

import pytest

from nnrag.builtin_plugins import DEFAULT_SHIMS
from nnrag.errors import ConfigError
from nnrag.model import BlockHints
from nnrag.plugins import NNRAGFILE, parent_plugins
from nnrag.validate.probe.registries import nnrag_registry_classes


def project(tmp_path: Path, code: str) -> Path:
    repos = tmp_path / "repos.json"
    repos.write_text('{"sources": []}')
    (tmp_path / NNRAGFILE).write_text(textwrap.dedent(code))
    return repos


def test_without_nnragfile_only_builtins_answer(tmp_path: Path) -> None:
    plugins = parent_plugins(tmp_path / "repos.json", entry_points=False)
    assert plugins.nnragfile is None
    assert plugins.block_inputs("s:m:Block", "Block") is None
    assert plugins.shims() == [
        {
            "attribute": "_module_dict",
            "type_key": "type",
            "scope": "scope",
            "parent": "parent",
            "default_scope": "DefaultScope",
        }
    ]
    spec = plugins.child_spec()
    assert spec["nnragfile"] is None
    assert spec["entry_points"] == []


def test_nnragfile_hooks_need_no_marker_and_answer_as_hints(tmp_path: Path) -> None:
    repos = project(
        tmp_path,
        """
        seen = []

        def nnrag_block_inputs(block_id, class_name):
            if class_name == "Mlp":
                return {"kwargs": {"width": 8}, "inputs": [{"shape": [2, 8]}]}
            return None

        def nnrag_registry_shims():
            return [{"attribute": "registry_table", "type_key": "kind"}]

        def nnrag_result(block_id, result):
            seen.append((block_id, result))
        """,
    )
    plugins = parent_plugins(repos, entry_points=False)
    assert plugins.nnragfile == (tmp_path / NNRAGFILE).resolve()
    hints = plugins.block_inputs("s:m:Mlp", "Mlp")
    assert hints == BlockHints(
        pattern="s:m:Mlp", init_kwargs={"width": 8}, inputs=({"shape": [2, 8]},)
    )
    assert plugins.block_inputs("s:m:Other", "Other") is None
    assert {"attribute": "registry_table", "type_key": "kind"} in plugins.shims()
    plugins.observe("s:m:Mlp", "a result")
    module = plugins.manager.get_plugin(f"nnragfile:{plugins.nnragfile}")
    assert ("s:m:Mlp", "a result") in module.seen
    assert plugins.child_spec()["nnragfile"] == str(plugins.nnragfile)


def test_digest_follows_the_nnragfile(tmp_path: Path) -> None:
    repos = project(tmp_path, "def nnrag_block_inputs(block_id, class_name):\n    return None\n")
    before = parent_plugins(repos, entry_points=False).digest()
    (tmp_path / NNRAGFILE).write_text("X = 1\n")
    assert parent_plugins(repos, entry_points=False).digest() != before


def test_misspelt_hook_is_a_config_error_naming_the_hooks(tmp_path: Path) -> None:
    repos = project(tmp_path, "def nnrag_block_input(block_id, class_name):\n    return None\n")
    with pytest.raises(ConfigError, match=r"nnrag_block_input\b.*nnrag_block_inputs"):
        parent_plugins(repos, entry_points=False)


def test_broken_nnragfile_names_the_file(tmp_path: Path) -> None:
    repos = project(tmp_path, "raise RuntimeError('oops')\n")
    with pytest.raises(ConfigError, match=r"nnragfile\.py.*RuntimeError: oops"):
        parent_plugins(repos, entry_points=False)


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        ("[1, 2]", "return None or a dict"),
        ("{'weights': 1}", "return None or a dict"),
        ("{'kwargs': {'x': object()}}", "not plain JSON"),
    ],
)
def test_block_inputs_answers_are_checked(tmp_path: Path, answer: str, match: str) -> None:
    repos = project(
        tmp_path, f"def nnrag_block_inputs(block_id, class_name):\n    return {answer}\n"
    )
    plugins = parent_plugins(repos, entry_points=False)
    with pytest.raises(ConfigError, match=match):
        plugins.block_inputs("s:m:Block", "Block")


def test_bad_shim_is_a_config_error(tmp_path: Path) -> None:
    repos = project(tmp_path, "def nnrag_registry_shims():\n    return [{'type_key': 'type'}]\n")
    with pytest.raises(ConfigError, match="nnrag_registry_shims"):
        parent_plugins(repos, entry_points=False).shims()


class _ScopedRegistry:
    """A registry node of a scope tree, as the default shim reads it."""

    def __init__(self, scope: str, parent: _ScopedRegistry | None = None) -> None:
        self.name, self.scope, self.parent = "model", scope, parent
        self._module_dict: dict[str, type] = {}

    def add(self, name: str) -> _ScopedRegistry:
        self._module_dict[name] = type(name, (), {})
        return self


def _tables(**registries: object) -> dict[str, list[str]]:
    module = types.ModuleType("block")
    vars(module).update(registries)
    shims = [dict(shim) for shim in DEFAULT_SHIMS]
    return {name: sorted(table) for name, table in nnrag_registry_classes(module, shims).items()}


def test_registry_tables_name_a_sibling_scope_and_keep_the_shared_path_plain() -> None:
    root = _ScopedRegistry("base").add("Shared")
    up = _ScopedRegistry("up", root).add("UpNeck")
    down = _ScopedRegistry("down", root).add("DownHead")
    assert _tables(ROOT=root, UP=up, DOWN=down, ALIAS=down) == {
        "model": ["Shared", "down.DownHead", "up.UpNeck"]
    }


def test_registry_tables_of_one_chain_are_plain() -> None:
    root = _ScopedRegistry("base").add("Shared")
    child = _ScopedRegistry("down", root).add("DownHead")
    assert _tables(ROOT=root, CHILD=child) == {"model": ["DownHead", "Shared"]}


def test_an_empty_registry_is_a_table_of_its_own() -> None:
    root = _ScopedRegistry("base").add("Shared")
    empty = _ScopedRegistry("down", root)
    empty.name = "tokenizer"
    assert _tables(ROOT=root, EMPTY=empty) == {"model": ["Shared"], "tokenizer": []}
