"""Every adapter starts one sandbox server per run, not one per block file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag import cli
from nnrag.blockfile.header import body_digest, render_header
from nnrag.validate.sandbox import Sandbox

pytestmark = pytest.mark.integration

BODY = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class {name}(nn.Module):
        def __init__(self, dim: int = 4) -> None:
            super().__init__()
            self.lin = nn.Linear(dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x)
    """
)
NAMES = ("First", "Second", "Third")


def write_blocks(folder: Path) -> list[Path]:
    """Three closed block files with headers, one class each."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in NAMES:
        body = BODY.format(name=name)
        header = render_header(
            block_id=f"src:pkg.layers:{name}",
            source="/src (path)",
            revision="abc",
            source_packages=["pkg"],
            files=[("pkg/layers.py", "swh:1:cnt:" + "b" * 40)],
            license="MIT",
            requires=["torch>=2.1"],
            digest=body_digest(body),
        )
        path = folder / f"{name}.py"
        path.write_text(header + "\n" + body, encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The process ids of the sandbox servers started in this process, in order."""
    started: list[int] = []
    original = Sandbox.start

    def start(self: Sandbox) -> None:
        before = self.pid
        original(self)
        if self.pid is not None and self.pid != before:
            started.append(self.pid)

    monkeypatch.setattr(Sandbox, "start", start)
    return started


def test_check_import_starts_one_sandbox(
    tmp_path: Path, servers: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_blocks(tmp_path / "blocks")
    code = cli.main(["check", "--import", "--no-cache", *map(str, paths)])
    assert (code, capsys.readouterr().out) == (0, "")
    assert len(servers) == 1


def test_vendored_items_share_one_sandbox(pytester: pytest.Pytester, servers: list[int]) -> None:
    write_blocks(pytester.path / "vendor")
    result = pytester.inline_run("--nnrag-vendored", "vendor", "--nnrag-depth", "forward")
    result.assertoutcome(passed=len(NAMES))
    assert len(servers) == 1
