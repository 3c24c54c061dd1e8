"""Preloading: the installed third-party modules a block file imports, imported once into the
warm server (after a confined child imported them cleanly) so that forked children inherit them.

A block file starts with its imports; an OpenMMLab block imports ``rich``, ``yaml``, ... at the
top, and each forked child would import them again, block after block. The server instead
imports them before it forks, under these guards:

- only modules the file imports at its top level before its first definition (module body
  and top-level ``try`` bodies), absolute, installed (found without importing anything),
  outside the standard library and outside the block's own source packages; never the
  block's own code;
- a module is first imported in a throwaway child confined like a block (:func:`trial_main`):
  it must import without an error, without a refusal of the sandbox, without starting a
  thread, without creating a file and without installing a signal handler; the first module
  that fails stops the trial (the modules after it were tried with it loaded);
- the server imports the trial's clean modules in the same order, with its standard streams
  on ``/dev/null``, HOME, TMPDIR and working folder in an empty folder of its own; a module
  that fails there is skipped; if the server's thread count grows, or its resident memory
  passes its budget, preloading stops for the server's life.

A module is decided once per server: later blocks that import it cost nothing.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import os
import signal
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from nnrag.validate.frames import Message, write_frame

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Block files above this size are not read for preloading (their children import as before)."""
BUDGET_MB = 1024
"""How much the server's resident memory may grow by preloading."""

Trial = Callable[[Sequence[str]], list[Message]]
"""Runs :func:`trial_main` on some modules in a confined child; returns its messages."""


def top_level_imports(code: str) -> list[str]:
    """Absolute modules a file imports at its top level before its first ``def``, ``class`` or
    decorator (``import a.b`` -> ``a.b``; ``from a.b import c`` -> ``a.b``), in order, once
    each; ``[]`` when that part does not parse. Only the part before is parsed: the server
    reads every block file, and a whole OpenMMLab block file takes long to parse."""
    ends = [code.find(f"\n{start}") for start in ("def ", "async def ", "class ", "@")]
    end = min((at for at in ends if at >= 0), default=len(code))
    try:
        tree = ast.parse(code[:end])
    except (SyntaxError, ValueError):
        return []
    found: dict[str, None] = {}
    for node in _top_statements(tree.body):
        if isinstance(node, ast.Import):
            found.update((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found[node.module] = None
    return list(found)


def _top_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, ast.Try):
            yield from node.body
        else:
            yield node


def wanted(code: str, source_packages: Sequence[str], decided: Collection[str] = ()) -> list[str]:
    """The modules of ``code``'s top-level imports the server may preload: absolute, not loaded
    yet nor ``decided``, installed, outside the standard library and the block's own
    ``source_packages``."""
    own = {"__future__", "__main__", *source_packages}
    names = []
    for name in top_level_imports(code):
        top = name.partition(".")[0]
        if name in sys.modules or name in decided or top in own or top in sys.stdlib_module_names:
            continue
        if _installed(top):
            names.append(name)
    return names


def _installed(top: str) -> bool:
    """Whether top-level module ``top`` is found on the path (its finders run, no module)."""
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


class Preloader:
    """The server's preloading state: which modules it decided, whether it still preloads."""

    def __init__(self, folder: Path, *, budget_mb: int = BUDGET_MB) -> None:
        self.folder = folder
        """An empty folder of the server: HOME, TMPDIR and working folder of its imports."""
        self.decided: dict[str, bool] = {}
        """Module -> imported into the server (``False``: refused, by the trial or here)."""
        self.enabled = True
        self.stopped = ""
        """Why preloading stopped (empty while it goes on)."""
        self.budget_mb = budget_mb
        self._baseline_kb: int | None = None

    def before(self, path: str, source_packages: Sequence[str], trial: Trial) -> list[str]:
        """Preload what the block file at ``path`` imports; return the modules imported now."""
        if not self.enabled:
            return []
        names = wanted(_read(path), source_packages, self.decided)
        if not names:
            return []
        clean = _clean_modules(trial(names))
        if len(clean) < len(names):  # the modules after it stay undecided (a later trial)
            self.decided[names[len(clean)]] = False
        return self._import(clean)

    def _import(self, names: Sequence[str]) -> list[str]:
        imported: list[str] = []
        if self._baseline_kb is None:
            self._baseline_kb = resident_kb()
        tasks = task_count()
        with _quiet_in(self.folder):
            for name in names:
                try:
                    importlib.import_module(name)
                except BaseException:  # an installed module's import may raise anything
                    self.decided[name] = False
                    break
                self.decided[name] = True
                imported.append(name)
                if task_count() > tasks:
                    self._stop(f"importing {name} started a thread in the server")
                    break
                if resident_kb() - self._baseline_kb > self.budget_mb * 1024:
                    self._stop(f"the server's memory grew past {self.budget_mb} MB")
                    break
        return imported

    def _stop(self, why: str) -> None:
        self.enabled = False
        self.stopped = why


def _read(path: str) -> str:
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return ""
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _clean_modules(messages: list[Message]) -> list[str]:
    """The modules the trial imported cleanly, in order, up to the first that was not (a
    refusal the server answered for the trial makes none of them clean)."""
    if any(m.get("kind") == "refused" for m in messages):
        return []
    if not any(m.get("kind") == "result" for m in messages):  # crashed or timed out
        return []
    clean: list[str] = []
    for message in messages:
        if message.get("kind") != "preload":
            continue
        if message.get("clean") is not True or not isinstance(message.get("module"), str):
            break
        clean.append(message["module"])
    return clean


@contextlib.contextmanager
def _quiet_in(folder: Path) -> Iterator[None]:
    """Standard streams on ``/dev/null``; HOME, TMPDIR and working folder in ``folder``."""
    saved_env = {key: os.environ.get(key) for key in ("HOME", "TMPDIR")}
    saved_cwd = os.getcwd()
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = (os.dup(1), os.dup(2))
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.environ.update(HOME=str(folder), TMPDIR=str(folder))
        os.chdir(folder)
        yield
    finally:
        os.chdir(saved_cwd)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        for fd in (*saved_fds, devnull):
            os.close(fd)


def task_count() -> int:
    """Threads of this process, native ones included (``/proc``; Python's where there is none)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def resident_kb() -> int:
    """Resident memory of this process in kB (0 where ``/proc`` does not say)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def trial_main(
    modules: Sequence[str],
    *,
    result_fd: int,
    tmp: Path,
    violations: list[str],
    probes: list[str],
) -> None:
    """In a child confined like a block: import ``modules`` one by one, one ``preload`` frame
    each (``clean``: no error, no refusal, no new thread, no new file in ``tmp``, no signal
    handler changed); stop at the
    first that is not clean; then a ``result`` frame."""
    for name in modules:
        tasks, files, refused = task_count(), _files(tmp), len(violations) + len(probes)
        handlers = _handlers()
        error = ""
        try:
            importlib.import_module(name)
        except BaseException as caught:  # an installed module's import may raise anything
            error = f"{type(caught).__name__}: {caught}"
        why = error or _side_effects(tasks, files, refused, tmp, [*violations, *probes])
        if not why and _handlers() != handlers:
            why = "installed a signal handler"
        write_frame(result_fd, {"kind": "preload", "module": name, "clean": not why, "why": why})
        if why:
            break
    write_frame(result_fd, {"kind": "result"})


def _side_effects(tasks: int, files: set[str], refused: int, tmp: Path, now: list[str]) -> str:
    """What an import did that a preloaded module may not (empty: nothing)."""
    if len(now) > refused:
        return "refused by the sandbox"
    if task_count() > tasks:
        return "started a thread"
    if _files(tmp) != files:
        return "created a file"
    return ""


def _handlers() -> dict[int, object]:
    """This process's signal handlers (a preloaded module must not change the server's)."""
    found: dict[int, object] = {}
    for number in signal.valid_signals():
        with contextlib.suppress(ValueError, OSError):
            found[int(number)] = signal.getsignal(number)
    return found


def _files(folder: Path) -> set[str]:
    found: set[str] = set()
    for root, dirs, names in os.walk(folder):
        found.update(os.path.join(root, n) for n in (*dirs, *names))
    return found


def describe(preloader: Preloader) -> dict[str, Any]:
    """What the server preloaded (for tests and measurements)."""
    return {
        "imported": sorted(n for n, ok in preloader.decided.items() if ok),
        "refused": sorted(n for n, ok in preloader.decided.items() if not ok),
        "stopped": preloader.stopped,
    }


__all__ = ["Preloader", "top_level_imports", "trial_main", "wanted"]
