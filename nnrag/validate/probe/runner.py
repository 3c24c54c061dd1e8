"""Runs in the sandbox child: import a block file, find constructor arguments and inputs, run it."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pluggy
import torch
from torch import nn

from nnrag.plugins import builtin_child_manager, child_manager
from nnrag.validate import refusals
from nnrag.validate.probe.boot import fill_uninitialized_memory
from nnrag.validate.probe.budget import stop_interrupting, uninterrupted
from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.harvest import Harvester
from nnrag.validate.probe.inputs import build_inputs
from nnrag.validate.probe.outcomes import (
    NON_FINITE,
    RecipeError,
    block_frames,
    classify,
    describe,
    tensors_in,
    unfilled_note,
)
from nnrag.validate.probe.registries import Carried
from nnrag.validate.probe.screen import MetaScreen
from nnrag.validate.probe.search import Search
from nnrag.validate.probe.values import encode, lossy, seed_cpu
from nnrag.validate.refusals import BLOCK_MODULE
from nnrag.validate.unbound import failed_import, unbound_message

Send = Callable[[dict[str, Any]], None]

# --------------------------------------------------------------------------- harvesting


# --------------------------------------------------------------------------- running


def warm_up() -> None:
    """Import and exercise what most blocks use, once, in the warm parent."""
    import torch.nn.functional as F
    import torch.utils.checkpoint

    for name in ("numpy", "einops", "scipy.special"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    layer = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2)
    )
    out = layer(torch.randn(2, 3, 8, 8))
    F.gelu(nn.LayerNorm(2)(out)).sum().backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
    nn.MultiheadAttention(4, 2, batch_first=True)(*(torch.randn(1, 3, 4),) * 3)
    with torch.device("meta"):  # the first meta op loads torch's meta kernels (seconds)
        F.gelu(nn.LayerNorm(4)(nn.Conv2d(3, 4, 3)(torch.randn(2, 3, 8, 8)).permute(0, 2, 3, 1)))
    builtin_child_manager()
    _probe_once()


_WARM_BLOCK = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, in_features: int, out_features: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)
"""


def _probe_once() -> None:
    """Probe a small block in the parent, so that every forked child inherits warm caches
    (compiled regular expressions, source lines, signatures) instead of filling its own."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "warm_block.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(_WARM_BLOCK)
        request = {"path": path, "class_name": "Block", "depth": "backward", "timeout_s": 60}
        Runner(request, lambda message: None, []).run()
    sys.modules.pop(BLOCK_MODULE, None)


class Runner:
    """One block through import, instantiate, forward and backward."""

    def __init__(self, request: Mapping[str, Any], send: Send, violations: list[str]) -> None:
        self.request = request
        self.send = uninterrupted(send)
        self.violations = violations
        self.seed = int(request.get("seed", 0))
        self.timings: dict[str, float] = {}
        self.reached: str | None = request.get("reached")
        self.recipe: dict[str, Any] = {"origin": "none", "seed": self.seed, "attempts": 0}
        self.harvest: list[dict[str, Any]] = []
        self.source_packages = frozenset(request.get("source_packages", ()))
        self.baseline = frozenset(sys.modules)
        """Modules imported before the block: only those it imports count as its own."""
        self.plugins: pluggy.PluginManager | None = None
        self.replay: Mapping[str, Any] | None = request.get("replay")
        self.input_seed = self.seed
        if self.replay is not None and self.replay.get("input_seed") is not None:
            self.input_seed = int(self.replay["input_seed"])

    def passed(self, stage: str, started: float) -> None:
        self.timings[stage] = time.monotonic() - started
        self.reached = stage
        self.send({"kind": "stage", "stage": stage, "seconds": self.timings[stage]})

    def finish(
        self,
        failed: str | None = None,
        category: str | None = None,
        message: str = "",
        *,
        error: BaseException | None = None,
    ) -> None:
        stop_interrupting()  # the search's budget no longer runs: the reply is sent whole
        if failed and isinstance(error, NameError):
            reason = failed_import(self.block_text(), error, self.source_packages)
            if reason is not None:
                category, message = "missing-external", f"{message} ({reason})"
        # a failure keeps its own category unless the sandbox refused something (an import of
        # the source found at the failure, ``mmcv._ext`` of an installed mmcv, is not the cause)
        refusal = (
            self.refusal(imports=False)
            if failed and category not in {"memory", "timeout"}
            else None
        )
        if refusal is not None:
            category, message = refusal
        self.send(
            {
                "kind": "result",
                "stage_reached": self.reached,
                "failed_stage": failed,
                "category": category,
                "message": message,
                "recipe": self.recipe,
                "timings": self.timings,
                "harvest": self.harvest,
                "frames": block_frames(error, str(self.request.get("path", ""))),
                "denied": refusals.escaped(error),  # a refused probe made it fail
            }
        )

    def refusal(self, *, imports: bool = True) -> tuple[str, str] | None:
        """(category, message) when the block did what a standalone block may not, naming
        only that: the sandbox's refusals, or its own source packages imported at run time
        (by name, e.g. ``import_module('mmdet.registry')``, where they happen to be installed).
        """
        if self.violations:
            refused = list(dict.fromkeys(self.violations))
            more = f" (and {len(refused) - 3} more)" if len(refused) > 3 else ""
            return "sandbox-violation", "refused: " + "; ".join(refused[:3]) + more
        leaked = sorted(
            {name.partition(".")[0] for name in set(sys.modules) - self.baseline}
            & self.source_packages
        )
        if leaked and imports:
            return (
                "source-import",
                f"imported its own source package {', '.join(map(repr, leaked))} at run time "
                "(by name; installed here, but a block must not need it)",
            )
        return None

    def violated(self, stage: str, started: float) -> bool:
        refusal = self.refusal()
        if refusal is None:
            self.passed(stage, started)
            return False
        self.finish(stage, *refusal)
        return True

    def run(self) -> None:
        depth = str(self.request.get("depth", "forward"))
        started = time.monotonic()
        try:
            self.plugins = child_manager(self.request.get("plugins") or {})
        except Exception as error:
            self.finish("import", "internal-error", f"cannot load nnrag plugins: {error}")
            return
        self.send({"kind": "running", "stage": "import"})
        try:
            module = load(str(self.request["path"]))
        except BaseException as error:
            self.finish(
                "import",
                classify(error, "import", self.violations, self.source_packages),
                describe(error, self.source_packages),
                error=error,
            )
            return
        if self.violated("import", started) or depth == "import":
            if self.refusal() is None:
                self.finish()
            return
        try:
            shims = (self.request.get("plugins") or {}).get("shims")
            package = str(self.request.get("module") or "").partition(".")[0]
            Carried.load(self.plugins, module, shims, package)
        except Exception as error:
            self.finish("import", "internal-error", f"an nnrag registry plugin failed: {error}")
            return
        cls = getattr(module, str(self.request["class_name"]), None)
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            self.not_a_module(cls)
            return
        try:
            self.search(module, cls, depth)
        except RecipeError as error:
            self.finish("instantiate", "ctor-args", str(error))

    def block_text(self) -> str:
        """The block file's text ("" where it cannot be read)."""
        try:
            return Path(str(self.request["path"])).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return ""

    def not_a_module(self, bound: object) -> None:
        """Finish a block whose imported file does not bind its class to an nn.Module class:
        ``missing-external`` when the file's own code decided so (the definition sits under
        a guard that was false here, or a base is a fallback), else an nnrag bug."""
        name = str(self.request["class_name"])
        message = unbound_message(self.block_text(), name, bound)
        if message is None:
            self.finish(
                "instantiate", "internal-error", f"{name} is not an nn.Module class in the file"
            )
            return
        self.finish("instantiate", "missing-external", message)

    def search(self, module: Any, cls: type, depth: str) -> None:
        Search(self, module, cls, depth).run()

    def screen_for(self, cls: type, ctor: Ctor, block: nn.Module) -> MetaScreen | None:
        """A meta-device screen for costly input candidates (request key ``meta_screen``:
        ``"auto"``, the default, screens costly candidates; ``"always"`` every one; false none).
        """
        mode = self.request.get("meta_screen", "auto")
        if not mode:
            return None
        return MetaScreen(
            block,
            lambda: cls(*ctor.args, **ctor.kwargs),
            [*ctor.args, *ctor.kwargs.values()],
            always=mode == "always",
        )

    def screened_out(
        self,
        screen: MetaScreen,
        harvester: Harvester | None,
        args: list[Any],
        kwargs: dict[str, Any],
    ) -> str | None:
        """The meta-device error of a candidate (harvesting paused: meta runs prove nothing)."""
        if harvester is not None:
            harvester.paused = True
        try:
            return screen.check(args, kwargs, self.seed)
        finally:
            if harvester is not None:
                harvester.paused = False
            self.recipe["screens"] = screen.screens
            self.recipe["meta_screen"] = screen.copy is not None

    def record_ctor(self, ctor: Ctor) -> None:
        """Record the constructor call about to be tried (so a failure has its recipe too)."""
        init_args = encode(list(ctor.args))
        init_kwargs = {k: encode(v) for k, v in ctor.kwargs.items()}
        lost = lossy({"init_args": init_args, "init_kwargs": init_kwargs})
        self.recipe.update(
            origin=ctor.origin, init_args=init_args, init_kwargs=init_kwargs, lossless=not lost
        )
        for key in ("parameters", "placeholders", "lossy", "output_digest", "output_shapes"):
            self.recipe.pop(key, None)
        if lost:
            self.recipe["lossy"] = lost
        if ctor.placeholders:
            self.recipe["placeholders"] = list(ctor.placeholders)

    def record_built(self, block: nn.Module) -> None:
        self.recipe["parameters"] = sum(
            p.numel()
            for p in block.parameters()
            if not isinstance(p, nn.parameter.UninitializedParameter)  # lazy until forward
        )

    def forward(self, block: nn.Module, args: list[Any], kwargs: dict[str, Any]) -> Any:
        self.recipe["input_seed"] = self.input_seed
        real_args, real_kwargs = build_inputs(args, kwargs, self.input_seed)
        with torch.no_grad():
            return block(*real_args, **real_kwargs)

    @staticmethod
    def check_output(out: Any, block: nn.Module) -> str:
        found = tensors_in(out)
        if not found:
            return f"forward returned no tensor (got {type(out).__name__})"
        for tensor in found:
            if (tensor.is_floating_point() or tensor.is_complex()) and not bool(
                torch.isfinite(tensor).all()
            ):
                return f"forward returned {NON_FINITE} values (nan or inf)" + unfilled_note(block)
        return ""

    def backward(self, block: nn.Module, args: list[Any], kwargs: dict[str, Any]) -> None:
        started = time.monotonic()
        self.send({"kind": "running", "stage": "backward"})
        try:
            block.train()
            real_args, real_kwargs = build_inputs(args, kwargs, self.input_seed)
            for value in [*real_args, *real_kwargs.values()]:
                if isinstance(value, torch.Tensor) and value.is_floating_point():
                    value.requires_grad_(True)
            out = block(*real_args, **real_kwargs)
            live = [t for t in tensors_in(out) if t.requires_grad]
            trainable = [p for p in block.parameters() if p.requires_grad]
            if not live:
                if trainable:
                    self.finish(
                        "backward",
                        "runtime-error",
                        "no output depends on a trainable parameter or input",
                    )
                    return
                self.passed("backward", started)
                self.finish()
                return
            loss = sum((t.float().mean() if not t.is_complex() else t.abs().mean()) for t in live)
            assert isinstance(loss, torch.Tensor)
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
        except BaseException as error:
            self.finish(
                "backward",
                classify(error, "backward", self.violations, self.source_packages),
                describe(error, self.source_packages),
                error=error,
            )
            return
        bad = [
            n
            for n, p in block.named_parameters()
            if p.grad is not None and not bool(torch.isfinite(p.grad).all())
        ]
        if bad:
            self.finish(
                "backward", "runtime-error", f"non-finite gradients in {', '.join(bad[:5])}"
            )
            return
        if self.violated("backward", started):
            return
        self.finish()


def load(path: str) -> Any:
    """Execute a block file as module ``nnrag_block`` (:data:`BLOCK_MODULE`)."""
    name = BLOCK_MODULE
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_block(request: Mapping[str, Any], *, send: Send, violations: list[str]) -> None:
    """Entry point in the sandbox child."""
    fill_uninitialized_memory()
    seed_cpu(int(request.get("seed", 0)))
    Runner(request, send, violations).run()
