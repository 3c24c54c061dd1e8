"""Real repository layouts: extern policy, discovery scope vs resolution, namespace folders."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from nnrag.config import load_settings
from nnrag.errors import ConfigError
from nnrag.extract.block import extract
from nnrag.index.build import build_and_load, index_tree, index_trees
from nnrag.index.discover import discover_blocks
from nnrag.index.layout import Extern, Layout, matches, unused_extern
from nnrag.model import DEFAULT_EXTERN, SourceSpec

CASES = Path(__file__).resolve().parent.parent / "cases"
BLOCK = (
    "from torch import nn\nclass {name}(nn.Module):\n    def forward(self, x):\n        return x\n"
)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def spec(name: str, root: Path, *paths: str) -> SourceSpec:
    return SourceSpec(name=name, kind="path", location=str(root.resolve()), paths=paths)


# -- extern ----------------------------------------------------------------------------------


def test_extern_patterns_match_packages_and_globs() -> None:
    assert matches("torch", "torch")
    assert matches("torch", "torch.nn.modules.conv")
    assert not matches("torch", "torchvision")
    assert matches("mmcv._ext*", "mmcv._ext_impl")
    assert not matches("mmcv._ext*", "mmcv.ops")
    extern = Extern(["torch", "numpy.*"])
    assert (extern("torch.nn"), extern("numpy"), extern("numpy.linalg"), extern("timm")) == (
        True,
        False,
        True,
        False,
    )


def test_extern_in_every_format(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    listed = tmp_path / "a.json"
    listed.write_text(json.dumps({"sources": [{"path": "src"}], "extern": ["torch", "numpy"]}))
    mapping = tmp_path / "b.json"
    mapping.write_text(json.dumps({"o/r": {"path": "src"}, "extern": ["torch", "mmcv._ext*"]}))
    plain = tmp_path / "c.json"
    plain.write_text(json.dumps([{"path": "src"}]))
    assert load_settings(listed, cache_dir=tmp_path).extern == ("torch", "numpy")
    settings = load_settings(mapping, cache_dir=tmp_path)
    assert settings.extern == ("torch", "mmcv._ext*")
    assert [s.name for s in settings.sources] == ["o/r"]
    assert load_settings(plain, cache_dir=tmp_path).extern == DEFAULT_EXTERN == ("torch",)


@pytest.mark.parametrize(
    ("value", "key"),
    [(["torch", "no spaces"], "extern.1"), ("torch", "extern"), ([3], "extern.0")],
)
def test_bad_extern_is_a_located_config_error(tmp_path: Path, value: object, key: str) -> None:
    file = tmp_path / "repos.json"
    file.write_text(json.dumps({"sources": [], "extern": value}))
    with pytest.raises(ConfigError) as caught:
        load_settings(file, cache_dir=tmp_path)
    assert caught.value.key == key
    assert str(file) in str(caught.value)
    assert "torch" in caught.value.reason


def test_unused_extern_warns_per_pattern() -> None:
    names = ["timm.layers", "torch.nn", "numpy"]
    (unmatched,) = unused_extern(["torch", "numpy", "mmcv._ext*"], names)
    assert "'mmcv._ext*'" in unmatched
    (message,) = unused_extern(["tensorflow"], names)
    assert "'tensorflow'" in message
    assert "extern" in message


def test_no_extern_warning_when_no_source_was_indexed() -> None:
    """A source that could not be fetched has its own error; the default ``torch`` is not
    'unused' then."""
    assert unused_extern(["torch"], []) == ()


def test_build_reports_unused_extern(tmp_path: Path) -> None:
    write(tmp_path / "src", {"pkg/__init__.py": "", "pkg/m.py": "import torch\n"})
    file = tmp_path / "repos.json"
    file.write_text(json.dumps({"sources": [{"path": "src"}], "extern": ["torch", "tensrflow"]}))
    stats, _ = build_and_load(load_settings(file, cache_dir=tmp_path / "cache"))
    assert len(stats.warnings) == 1
    assert "'tensrflow'" in stats.warnings[0]


# -- indexed torch ---------------------------------------------------------------------------


def _case_specs(name: str) -> tuple[SourceSpec, ...]:
    case = json.loads((CASES / name / "case.json").read_text())
    return tuple(
        SourceSpec(
            name=s["name"],
            kind="path",
            location=str((CASES / name / s["root"]).resolve()),
            paths=tuple(s.get("paths", ())),
            priority=s.get("priority", 0),
        )
        for s in case["sources"]
    )


def test_indexed_torch_blocks_of_both_sources() -> None:
    index = index_trees(_case_specs("torch_indexed_other_source"))
    found = {b.id for b in discover_blocks(index)}
    assert found == {"src:pkg.mlp:Mlp", "torch:torch.nn.modules.linear:Linear"}
    assert index.source_of_module("torch.nn") is None
    assert index.source_packages("torch") == frozenset()


def test_indexed_torch_not_extern_still_roots_discovery() -> None:
    """With ``extern: []`` torch is inlined like any source, and nn.Module stays the root."""
    index = index_trees(_case_specs("torch_indexed_other_source"), extern=())
    found = {b.id for b in discover_blocks(index)}
    assert "src:pkg.mlp:Mlp" in found
    assert "torch:torch.nn.modules.linear:Linear" in found
    assert index.source_of_module("torch.nn") == "torch"


# -- paths scope discovery, not resolution ---------------------------------------------------


def test_out_of_scope_modules_are_indexed_on_demand() -> None:
    root = CASES / "resolve_out_of_scope_module"
    index = index_trees(
        (spec("src", root / "src", "det/models"), spec("engine", root / "engine", "eng/model"))
    )
    blocks = {b.id for b in discover_blocks(index)}
    assert blocks == {"src:det.models.head:Head", "engine:eng.model.base:BaseModule"}
    assert "det.utils.misc" not in {m.module for m in index.modules()}
    reached = index.module("det.utils.misc", prefer="src")
    assert reached is not None
    assert (reached.source, reached.path) == ("src", "det/utils/misc.py")
    assert index.module("eng.dist.utils") is not None
    assert index.module("det.nothing") is None
    block = next(b for b in discover_blocks(index) if b.name == "Head")
    extracted = extract(index, block)
    assert extracted.closed
    assert "def make_divisible(" in extracted.code
    assert "def get_world_size(" in extracted.code
    assert "\nimport eng" not in extracted.code
    assert "\nfrom det" not in extracted.code


HELPER_OUTSIDE_PATHS = {
    "pkg/__init__.py": "",
    "pkg/models/__init__.py": "",
    "pkg/models/net.py": """
        from torch import nn
        from pkg.helpers import width

        class Net(nn.Module):
            def forward(self, x):
                return x * width()
    """,
    "pkg/helpers.py": "def width():\n    return 2\n",
}
"""A block under ``paths: ["pkg/models"]`` whose helper module lies outside them."""


def test_on_demand_analyses_are_cached_in_the_index(tmp_path: Path) -> None:
    root = write(tmp_path / "src", HELPER_OUTSIDE_PATHS)
    file = tmp_path / "repos.json"
    file.write_text(json.dumps([{"name": "src", "path": str(root), "paths": ["pkg/models"]}]))
    settings = load_settings(file, cache_dir=tmp_path / "cache")
    _, index = build_and_load(settings)
    assert index is not None
    first = index.module("pkg.helpers", prefer="src")
    assert first is not None
    from nnrag.index.build import load_index
    from nnrag.index.store import Store, db_path

    with Store(db_path(settings.cache_dir), create=False) as store:
        assert store.analysis(first.sha1, "pkg.helpers", False)[0] is not None
    again = load_index(settings).module("pkg.helpers", prefer="src")
    assert again == first


# -- layouts ---------------------------------------------------------------------------------


def test_layout_tops_and_files(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "models/yolo.py": "",
            "utils/general.py": "",
            "src/lib/__init__.py": "",
            "src/lib/sub/__init__.py": "",
            "src/lib/sub/m.py": "",
            "train.py": "",
            "not-a-name/x.py": "",
        },
    )
    layout = Layout(root)
    assert set(layout.tops) == {"models", "utils", "src", "lib", "train"}
    assert layout.file_for("models.yolo") == ("models/yolo.py", False)
    assert layout.file_for("lib.sub") == ("src/lib/sub/__init__.py", True)
    assert layout.file_for("lib.sub.m") == ("src/lib/sub/m.py", False)
    assert layout.file_for("train") == ("train.py", False)
    assert layout.file_for("models.nothing") is None


def test_paths_entry_naming_a_module_without_py(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "tv/__init__.py": "",
            "tv/utils.py": BLOCK.format(name="A"),
            "tv/other.py": BLOCK.format(name="B"),
        },
    )
    index = index_tree(root, paths=["tv/utils"])
    assert {b.id for b in discover_blocks(index)} == {"src:tv.utils:A"}
    assert not [p for p in index.problems if "matches no" in p.message]


def test_namespace_repository_layout_case_closes() -> None:
    root = CASES / "resolve_namespace_repository_layout" / "src"
    index = index_tree(root, paths=["models", "utils"])
    names = {b.id for b in discover_blocks(index)}
    assert names == {"src:models.common:Conv", "src:models.yolo:Detect"}
    assert index.source_packages("src") == frozenset({"models", "utils"})


def test_a_git_source_closes_over_modules_outside_its_paths(tmp_path: Path) -> None:
    """A git checkout holds every Python file, so on-demand resolution finds them there too."""
    root = write(tmp_path / "repo", HELPER_OUTSIDE_PATHS)
    identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], [*identity, "commit", "-qm", "1"]):
        subprocess.run(["git", *command], cwd=root, check=True, capture_output=True)
    file = tmp_path / "repos.json"
    file.write_text(json.dumps([{"name": "g", "git": root.as_uri(), "paths": ["pkg/models"]}]))
    _, index = build_and_load(load_settings(file, cache_dir=tmp_path / "cache"))
    assert index is not None
    (block,) = discover_blocks(index)
    extracted = extract(index, block)
    assert extracted.closed, extracted.findings
    assert "def width(" in extracted.code


def test_on_demand_reaches_namespace_folders_outside_paths(tmp_path: Path) -> None:
    root = tmp_path / "src"
    shutil.copytree(CASES / "resolve_namespace_repository_layout" / "src", root)
    index = index_tree(root, paths=["models"])
    assert "utils.general" not in {m.module for m in index.modules()}
    found = index.module("utils.general")
    assert found is not None
    assert found.path == "utils/general.py"
    assert index.module("utils.missing") is None
