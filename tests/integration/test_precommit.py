"""The exported pre-commit hook for real, and `nnrag check` as a process (never imports torch)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nnrag.blockfile.header import body_digest, render_header

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
NNRAG = [sys.executable, "-m", "nnrag.cli"]

BODY = textwrap.dedent(
    '''\
    from __future__ import annotations

    import torch
    from torch import nn


    def _scale(x: torch.Tensor) -> torch.Tensor:
        return x * 2.0


    class Mlp(nn.Module):
        """A tiny MLP."""

        def __init__(self, dim: int = 4) -> None:
            super().__init__()
            self.fc = nn.Linear(dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return _scale(self.fc(x))
    '''
)


def block_text(body: str = BODY) -> str:
    header = render_header(
        block_id="timm:timm.layers.mlp:Mlp",
        source="timm==1.0.31 (pypi)",
        revision="1.0.31",
        source_packages=["timm"],
        files=[("timm/layers/mlp.py", "swh:1:cnt:" + "a" * 40)],
        license="Apache-2.0",
        requires=["torch>=2.1"],
        digest=body_digest(body),
    )
    return header + "\n" + body


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
}


def git(
    cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_IDENTITY, **(env or {})},
        text=True,
        capture_output=True,
        check=check,
    )


# --------------------------------------------------------------------------- nnrag check process


def test_check_process_never_imports_torch(tmp_path: Path) -> None:
    path = tmp_path / "Mlp.py"
    path.write_text(block_text())
    script = textwrap.dedent(
        f"""
        import sys
        from nnrag.cli import main
        code = main(["check", {str(path)!r}, "--pristine"])
        heavy = sorted(m for m in ("torch", "numpy", "libcst") if m in sys.modules)
        print("EXIT", code, "HEAVY", heavy)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], text=True, capture_output=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "EXIT 0 HEAVY []"


def test_check_cli_output_and_exit_codes(tmp_path: Path) -> None:
    clean = tmp_path / "Mlp.py"
    clean.write_text(block_text())
    broken = tmp_path / "Broken.py"
    broken.write_text(block_text(BODY + "\nfrom .missing import helper\n"))
    ok = subprocess.run([*NNRAG, "check", str(clean)], text=True, capture_output=True, check=False)
    assert (ok.returncode, ok.stdout) == (0, "")
    assert ok.stderr == "All checks passed! (1 block file)\n"
    bad = subprocess.run(
        [*NNRAG, "check", str(clean), str(broken), "--pristine"],
        text=True,
        capture_output=True,
        check=False,
    )
    assert bad.returncode == 1
    line = len(broken.read_text().splitlines())
    assert bad.stdout.splitlines() == [
        f"{broken}:{line}:1: NNR201 relative import 'from .missing import ...': a vendored "
        "block must be standalone; re-extract it or inline the definitions it needs"
    ]
    assert "nnrag check: 1 of 2 block files failed" in bad.stderr
    folder = subprocess.run(
        [*NNRAG, "check", str(tmp_path), str(tmp_path / "Gone.py")],
        text=True,
        capture_output=True,
        check=False,
    )
    assert folder.returncode == 1
    assert folder.stdout.splitlines() == [
        *bad.stdout.splitlines(),
        f"{tmp_path / 'Gone.py'}: error: cannot read: No such file or directory",
    ]


def test_check_import_runs_the_block_in_the_sandbox(tmp_path: Path) -> None:
    good = tmp_path / "Mlp.py"
    good.write_text(block_text())
    bad = tmp_path / "Boom.py"
    bad.write_text(block_text(BODY + '\nraise RuntimeError("boom at import")\n'))
    done = subprocess.run(
        [*NNRAG, "check", "--import", str(good), str(bad)],
        text=True,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"{bad}:1:1: NNR301 import failed [runtime-error]: ")
    assert "boom at import" in line


# --------------------------------------------------------------------------- pre-commit


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A clone of this repository's HEAD (what a user's `repo:` points at) and its commit."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    clone = tmp_path_factory.mktemp("hook-repo") / "nnrag"
    git(ROOT, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone))
    rev = git(clone, "rev-parse", "HEAD").stdout.strip()
    return clone, rev


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the module: the hook environment is installed once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_home: Path) -> Path:
    """A user's git repository with a vendored block and the hook installed."""
    repo, rev = hook_repo
    project = tmp_path / "project"
    (project / "vendor" / "blocks").mkdir(parents=True)
    git(project, "init", "--quiet")
    (project / ".pre-commit-config.yaml").write_text(
        textwrap.dedent(
            f"""\
            repos:
              - repo: {repo}
                rev: {rev}
                hooks:
                  - id: nnrag-closed
                    files: ^vendor/blocks/
            """
        )
    )
    (project / "vendor" / "blocks" / "Mlp.py").write_text(block_text())
    (project / "README.md").write_text("not python\n")
    return project


def pre_commit(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=project,
        env=env,
        text=True,
        capture_output=True,
        check=False,
    )


def commit(
    project: Path, home: Path, message: str, *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``git commit`` (running the installed hook); the result is checked by the caller."""
    git(project, "add", "-A")
    return git(
        project,
        "commit",
        "-m",
        message,
        check=False,
        env={"PRE_COMMIT_HOME": str(home), **(env or {})},
    )


@pytest.mark.slow
def test_hook_passes_a_clean_commit_and_blocks_an_open_import(
    project: Path, pre_commit_home: Path
) -> None:
    installed = pre_commit(project, pre_commit_home, "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr

    clean = commit(project, pre_commit_home, "vendor Mlp")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "nnrag blocks stay closed" in clean.stdout + clean.stderr
    assert "Passed" in clean.stdout + clean.stderr

    block = project / "vendor" / "blocks" / "Mlp.py"
    lines = block.read_text().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith("from torch import nn"))
    lines.insert(at + 1, "from .missing import helper\n")
    block.write_text("".join(lines))
    failed = commit(project, pre_commit_home, "use a helper")
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0, output
    assert (
        f"vendor/blocks/Mlp.py:{at + 2}:1: NNR201 relative import 'from .missing import ...'"
        in output
    )
    assert "- hook id: nnrag-closed" in output
    log = git(project, "log", "--oneline").stdout.splitlines()
    assert len(log) == 1  # the second commit was refused


@pytest.mark.slow
def test_hook_files_filter_and_undefined_name(project: Path, pre_commit_home: Path) -> None:
    block = project / "vendor" / "blocks" / "Mlp.py"
    block.write_text(block.read_text().replace("return _scale(", "return _shift("))
    (project / "elsewhere.py").write_text("from .anything import x\n")  # outside files:
    git(project, "add", "-A")
    done = pre_commit(project, pre_commit_home, "run", "--all-files")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "undefined name '_shift'" in output
    assert "elsewhere.py" not in output


def test_check_noqa_select_and_ignore(tmp_path: Path) -> None:
    broken = tmp_path / "Broken.py"
    broken.write_text(
        block_text(BODY + "\nfrom .missing import helper\nimport not_installed_xyz\n")
    )

    def codes(*extra: str) -> list[str]:
        done = subprocess.run(
            [*NNRAG, "check", str(broken), "--no-cache", *extra],
            text=True,
            capture_output=True,
            check=False,
        )
        return [line.split(": ", 1)[1].split()[0] for line in done.stdout.splitlines()]

    assert codes() == ["NNR201", "NNR203"]
    assert codes("--select", "NNR2") == ["NNR201", "NNR203"]
    assert codes("--select", "NNR201") == ["NNR201"]
    assert codes("--ignore", "nnr203") == ["NNR201"]
    text = broken.read_text().replace("helper\n", "helper  # noqa: NNR201\n")
    broken.write_text(text)
    assert codes() == ["NNR203"]
    broken.write_text(text.replace("import not_installed_xyz", "import not_installed_xyz  # noqa"))
    assert codes() == []
    bad = subprocess.run(
        [*NNRAG, "check", str(broken), "--select", "x y"],
        text=True,
        capture_output=True,
        check=False,
    )
    assert bad.returncode == 2
    assert "expected finding codes or prefixes such as NNR101" in bad.stderr
