"""The warm server preloads the third-party modules block files import, only when a confined
child imported them cleanly; children inherit them; the sandbox's guarantees stay."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from nnrag.validate.frames import BlockReply, BlockRequest
from nnrag.validate.sandbox import Sandbox

pytestmark = pytest.mark.integration

PACKAGES = {
    "nnrag_pre_clean": "VALUE = 1\n",
    "nnrag_pre_second": "VALUE = 2\n",
    "nnrag_pre_thread": (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
    ),
    "nnrag_pre_file": (
        "import os\nopen(os.path.join(os.path.expanduser('~'), 'made.txt'), 'w').close()\n"
    ),
    "nnrag_pre_socket": (
        "import socket\n"
        "try:\n    socket.socket(socket.AF_INET).close()\nexcept OSError:\n    pass\n"
    ),
    "nnrag_pre_raises": "raise RuntimeError('this package cannot be imported')\n",
    "nnrag_pre_signal": "import signal\nsignal.signal(signal.SIGUSR1, lambda *_: None)\n",
    "nnrag_pre_own": "VALUE = 3\n",
}


def block(*modules: str, guarded: tuple[str, ...] = ()) -> str:
    """A block that says, at construction, which of its modules were loaded before its imports."""
    names = (*modules, *guarded)
    guards = "".join(f"try:\n    import {m}\nexcept Exception:\n    pass\n" for m in guarded)
    return (
        "import sys\n"
        f"LOADED = sorted(m for m in {names!r} if m in sys.modules)\n"
        + "".join(f"import {m}\n" for m in modules)
        + guards
        + textwrap.dedent(
            """
            from torch import nn


            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    raise ValueError(f"loaded before: {LOADED}")
            """
        )
    )


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    for name, code in PACKAGES.items():
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(code)
    return folder


@pytest.fixture(scope="module")
def sandbox(packages: Path) -> Iterator[Sandbox]:
    """A sandbox whose server finds the test packages (it gets the client's ``sys.path``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(packages))
        box = Sandbox()
        box.start()
    with box:
        yield box


def run(sandbox: Sandbox, tmp_path: Path, code: str, **request: object) -> BlockReply:
    path = tmp_path / "block.py"
    path.write_text(code)
    return sandbox.run(
        BlockRequest(path=str(path), class_name="Block", depth="instantiate", **request)  # type: ignore[arg-type]  # test keyword arguments
    )


def server_tasks(sandbox: Sandbox) -> int:
    """Threads of the process that forks the blocks (the sandbox process or its child)."""
    assert sandbox.pid is not None
    pid = sandbox.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    if sandbox.layers["namespaces"] and children:
        pid = int(children[0])  # PID 1 of the server's namespace
    return len(os.listdir(f"/proc/{pid}/task"))


def test_a_clean_module_is_loaded_before_the_block_runs(sandbox: Sandbox, tmp_path: Path) -> None:
    reply = run(sandbox, tmp_path, block("nnrag_pre_clean", "nnrag_pre_second"))
    assert reply.category == "ctor-args", reply
    assert "loaded before: ['nnrag_pre_clean', 'nnrag_pre_second']" in reply.message


@pytest.mark.parametrize(
    "module",
    [
        "nnrag_pre_thread",
        "nnrag_pre_file",
        "nnrag_pre_socket",
        "nnrag_pre_raises",
        "nnrag_pre_signal",
    ],
)
def test_a_module_with_side_effects_is_not_preloaded(
    sandbox: Sandbox, tmp_path: Path, module: str
) -> None:
    tasks = server_tasks(sandbox)
    for _ in range(2):  # the second run finds the module decided
        reply = run(sandbox, tmp_path, block(guarded=(module,)))
        assert "loaded before: []" in reply.message, reply
        assert reply.category == "ctor-args", reply
    assert server_tasks(sandbox) == tasks


def test_modules_after_an_unclean_one_wait_for_their_own_trial(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = block("nnrag_pre_clean", guarded=("nnrag_pre_raises", "nnrag_pre_second"))
    first = run(sandbox, tmp_path, code)
    assert "'nnrag_pre_raises'" not in first.message
    second = run(sandbox, tmp_path, code)
    assert "loaded before: ['nnrag_pre_clean', 'nnrag_pre_second']" in second.message, second


def test_the_blocks_own_source_package_is_never_preloaded(sandbox: Sandbox, tmp_path: Path) -> None:
    reply = run(sandbox, tmp_path, block("nnrag_pre_own"), source_packages=("nnrag_pre_own",))
    assert reply.category == "source-import", reply  # the child saw the block import it


def test_without_preloading_nothing_is_loaded_before(packages: Path, tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(packages))
        box = Sandbox(preload=False)
        box.start()
    with box:
        reply = run(box, tmp_path, block("nnrag_pre_clean"))
    assert "loaded before: []" in reply.message, reply
