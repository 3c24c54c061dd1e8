"""`nnrag check --fix`, its hook, and `nnrag vendor --rewrite-imports` on real vendored blocks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# the hook tests' helpers and fixtures (a clone of this repository, one pre-commit cache)
from test_precommit import commit, git, hook_repo, pre_commit, pre_commit_home

from nnrag.blockfile.header import parse_header, split_header
from nnrag.check.static import check_code
from nnrag.cli import main
from nnrag.vendor import read_manifest

pytestmark = pytest.mark.integration

__all__ = ["hook_repo", "pre_commit_home"]  # fixtures shared with the hook tests

LAYERS = textwrap.dedent(
    '''\
    """Layers."""

    from torch import nn

    from mylib.helpers import to_pair


    def _scale(x):
        return x * 2.0


    def _shift(x):
        return x + to_pair(1)[0]


    class Mlp(nn.Module):
        def __init__(self, dim: int = 4) -> None:
            super().__init__()
            self.fc = nn.Linear(dim, dim)

        def forward(self, x):
            return _scale(self.fc(x))
    '''
)


@pytest.fixture
def vendored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's git repository with ``mylib``'s Mlp vendored by ``nnrag extract --into``."""
    source = tmp_path / "src" / "mylib"
    source.mkdir(parents=True)
    (source / "__init__.py").write_text("")
    (source / "layers.py").write_text(LAYERS)
    (source / "helpers.py").write_text(
        "def to_pair(x):\n    return (x, x)\n\n\ndef twice(x):\n    return 2 * x\n"
    )
    (source / "extra.py").write_text(  # imported by nothing the block uses
        "def far_away(x):\n    return x\n\n\ndef twice(x):\n    return x + x\n"
    )
    repos = tmp_path / "repos.json"
    repos.write_text('{"sources": [{"name": "mylib", "path": "src"}]}')
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "--quiet")
    monkeypatch.setenv("NNRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(project)
    assert main(["extract", "Mlp", "--into", "vendor/blocks", "--repos", str(repos)]) == 0
    return project


def edit(block: Path, old: str, new: str) -> None:
    text = block.read_text()
    assert old in text
    block.write_text(text.replace(old, new))


def test_fix_inlines_a_helper_the_user_started_to_use(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = vendored / "vendor" / "blocks" / "Mlp.py"
    before = block.read_text()
    edit(block, "return _scale(self.fc(x))", "return _shift(_scale(self.fc(x)))  # mine")
    assert main(["check", "--fix", "vendor/blocks"]) == 1
    out = capsys.readouterr().out
    assert "vendor/blocks/Mlp.py: fixed: inlined _shift from mylib.layers" in out
    assert "fixed: added what it needs: to_pair" in out
    text = block.read_text()
    assert check_code(text, filename="Mlp.py") == ()
    assert "def _shift(x):" in text
    assert "def to_pair(x):" in text
    assert "return _shift(_scale(self.fc(x)))  # mine" in text  # the user's edit stays
    header = parse_header(text)
    assert header is not None
    assert [path for path, _ in header.files] == ["mylib/helpers.py", "mylib/layers.py"]
    # nnrag's own edits are stamped, the user's stay visible to --pristine
    assert main(["check", "--pristine", "vendor/blocks"]) == 1
    pristine = capsys.readouterr().out
    assert "NNR012" in pristine
    assert "changed Mlp" in pristine
    assert "_shift" not in pristine
    assert "to_pair" not in pristine
    (entry,) = read_manifest(block.parent)
    assert entry.digest == header.digest
    assert set(entry.definitions) == {"to_pair", "_scale", "_shift", "Mlp", "__all__"}
    spec = json.loads((block.parent / "Mlp.spec.json").read_text())
    assert "mylib.layers._shift" in spec["dependencies"]
    # a second run has nothing left to do
    assert main(["check", "--fix", "vendor/blocks"]) == 0
    assert capsys.readouterr().out == ""
    assert split_header(before)[0] != split_header(text)[0]


def test_fix_replaces_source_imports_and_declares_requirements(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = vendored / "vendor" / "blocks" / "Mlp.py"
    edit(
        block,
        "from torch import nn\n",
        "from torch import nn\nimport numpy as np\n\nimport mylib.layers as L\n"
        "from mylib.layers import _shift as sh  # the helper\n",
    )
    edit(block, "return _scale(self.fc(x))", "return sh(L._scale(self.fc(x))) * np.pi")
    edit(
        block,
        "    def forward(self, x):",
        "    def lazy(self):\n        from mylib.layers import _shift\n\n"
        "        return _shift(1.0)\n\n    def forward(self, x):",
    )
    assert main(["check", "--fix", str(block)]) == 1
    out = capsys.readouterr().out
    assert "fixed: removed 'from mylib.layers import _shift' (inlined as _shift)" in out
    assert "fixed: L._scale -> _scale" in out
    assert "fixed: sh -> _shift" in out
    assert "fixed: declared '# requires: numpy" in out
    text = block.read_text()
    assert check_code(text, filename="Mlp.py") == ()
    assert "return _shift(_scale(self.fc(x))) * np.pi" in text
    assert "    def lazy(self):\n\n        return _shift(1.0)\n" in text  # its import went
    assert not [line for line in text.splitlines() if line.startswith(("import my", "from my"))]
    header = parse_header(text)
    assert header is not None
    assert any(r.startswith("numpy") for r in header.requires)
    (entry,) = read_manifest(block.parent)
    assert entry.requirements == header.requires


def test_fix_finds_a_name_anywhere_in_the_source_when_it_is_unique(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = vendored / "vendor" / "blocks" / "Mlp.py"
    edit(block, "return _scale(self.fc(x))", "return twice(far_away(self.fc(x)))")
    assert main(["check", "--fix", str(block)]) == 1
    out = capsys.readouterr().out
    assert "fixed: inlined far_away from mylib.extra" in out
    assert (
        "cannot fix: undefined name 'twice': mylib defines it in 2 modules "
        "(mylib.extra, mylib.helpers); import it from the one you mean" in out
    )
    # the user picks one with an import; the next run inlines it
    edit(block, "from torch import nn\n", "from torch import nn\nfrom mylib.helpers import twice\n")
    assert main(["check", "--fix", str(block)]) == 1
    assert "removed 'from mylib.helpers import twice' (inlined as twice)" in capsys.readouterr().out
    assert check_code(block.read_text(), filename="Mlp.py") == ()
    assert "return 2 * x" in block.read_text()


def test_fix_never_imports_torch(vendored: Path) -> None:
    block = vendored / "vendor" / "blocks" / "Mlp.py"
    edit(block, "return _scale(self.fc(x))", "return _shift(self.fc(x))")
    script = textwrap.dedent(
        """
        import sys
        from nnrag.cli import main
        code = main(["check", "--fix", "vendor/blocks"])
        print("EXIT", code, "TORCH", "torch" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=vendored, text=True, capture_output=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "EXIT 1 TORCH False"
    assert "def _shift(x):" in block.read_text()


def test_fix_reports_what_it_cannot_fix(vendored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = vendored / "vendor" / "blocks" / "Mlp.py"
    edit(block, "return _scale(self.fc(x))", "return _nowhere(self.fc(x))")
    assert main(["check", "--fix", str(block)]) == 1
    out = capsys.readouterr().out
    assert "cannot fix: undefined name '_nowhere': mylib defines no such name" in out
    assert "NNR101 undefined name '_nowhere'" in out
    assert "return _nowhere(self.fc(x))" in block.read_text()  # untouched


def test_fix_needs_the_source_as_it_was_vendored(
    vendored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layers = tmp_path / "src" / "mylib" / "layers.py"
    layers.write_text(layers.read_text().replace("x * 2.0", "x * 3.0"))  # upstream moved on
    block = vendored / "vendor" / "blocks" / "Mlp.py"
    edit(block, "return _scale(self.fc(x))", "return _shift(self.fc(x))")
    edited = block.read_text()
    assert main(["check", "--fix", str(block)]) == 1
    out = capsys.readouterr().out
    assert "mylib changed since the block was vendored" in out
    assert "run `nnrag refresh` first" in out
    assert block.read_text() == edited


def test_fix_without_a_known_source_says_where_to_name_it(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loose = vendored / "loose"
    loose.mkdir()
    block = loose / "Mlp.py"
    block.write_text(
        (vendored / "vendor" / "blocks" / "Mlp.py")
        .read_text()
        .replace("return _scale(self.fc(x))", "return _shift(self.fc(x))")
    )
    assert main(["check", "--fix", str(block)]) == 1
    out = capsys.readouterr().out
    assert "cannot fix: " in out
    assert "its source 'mylib' is neither recorded in" in out
    assert "pass --repos FILE" in out
    repos = vendored.parent / "repos.json"
    assert main(["check", "--fix", "--repos", str(repos), str(block)]) == 1
    assert "fixed: inlined _shift from mylib.layers" in capsys.readouterr().out
    assert main(["check", str(block)]) == 0


@pytest.mark.slow
def test_fix_hook_fixes_then_the_next_commit_passes(
    vendored: Path, hook_repo: tuple[Path, str], pre_commit_home: Path, tmp_path: Path
) -> None:
    repo, rev = hook_repo
    (vendored / ".pre-commit-config.yaml").write_text(
        textwrap.dedent(
            f"""\
            repos:
              - repo: {repo}
                rev: {rev}
                hooks:
                  - id: nnrag-fix
                    files: ^vendor/blocks/
            """
        )
    )
    installed = pre_commit(vendored, pre_commit_home, "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    env = {"NNRAG_CACHE_DIR": str(tmp_path / "cache")}
    first = commit(vendored, pre_commit_home, "vendor Mlp", env=env)
    assert first.returncode == 0, first.stdout + first.stderr

    block = vendored / "vendor" / "blocks" / "Mlp.py"
    edit(block, "return _scale(self.fc(x))", "return _shift(_scale(self.fc(x)))")
    fixed = commit(vendored, pre_commit_home, "use _shift", env=env)
    output = fixed.stdout + fixed.stderr
    assert fixed.returncode != 0, output
    assert "vendor/blocks/Mlp.py: fixed: inlined _shift from mylib.layers" in output
    assert "- hook id: nnrag-fix" in output
    assert "files were modified by this hook" in output
    assert "def _shift(x):" in block.read_text()

    again = commit(vendored, pre_commit_home, "use _shift", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    log = git(vendored, "log", "--oneline").stdout.splitlines()
    assert len(log) == 2


# ---------------------------------------------------------------------- vendor --rewrite-imports

APP = textwrap.dedent(
    '''\
    """The user's model."""
    import os  # keep me

    # the layers
    import mylib
    from mylib import layers  # the module
    from mylib.layers import Mlp as LayerMlp, _scale


    def build():
        return [LayerMlp(), layers.Mlp(), mylib.layers.Mlp(), _scale, os.sep]
    '''
)


def test_rewrite_imports_check_then_write(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = vendored / "app"
    app.mkdir()
    (app / "model.py").write_text(APP)
    (app / "untouched.py").write_text("import os\n")

    assert main(["vendor", "--rewrite-imports", "app", "--check"]) == 1
    out, err = capsys.readouterr()
    assert (app / "model.py").read_text() == APP  # --check writes nothing
    assert "--- a/app/model.py" in out
    assert "+from vendor.blocks.Mlp import Mlp as LayerMlp" in out
    assert "untouched.py" not in out
    assert "would rewrite 1 file(s) to import from vendor.blocks" in err

    assert main(["vendor", "--rewrite-imports", "app"]) == 0
    out, err = capsys.readouterr()
    # the chains reuse the name the rewritten from-import binds
    assert "app/model.py: layers.Mlp -> LayerMlp (from vendor.blocks.Mlp import Mlp)" in out
    text = (app / "model.py").read_text()
    assert text == textwrap.dedent(
        '''\
        """The user's model."""
        import os  # keep me

        # the layers
        from mylib.layers import _scale
        from vendor.blocks.Mlp import Mlp as LayerMlp


        def build():
            return [LayerMlp(), LayerMlp(), LayerMlp(), _scale, os.sep]
        '''
    )
    assert main(["vendor", "--rewrite-imports", "app", "--check"]) == 0
    assert "would rewrite 0 file(s)" in capsys.readouterr().err


def test_rewrite_imports_needs_a_vendored_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app").mkdir()
    assert main(["vendor", "--rewrite-imports", "app"]) == 2
    assert "no nnrag-blocks.json under" in capsys.readouterr().err
