"""Benchmarks' shared check that an extracted block is identical to its original.

Used by ``extract_bench.py`` (torch-geometric) and ``identical_bench.py`` (OpenMMLab,
transformers, ultralytics). Both build the extracted class and the original class with the
recipe nnrag's probe recorded for the extracted file (constructor arguments, inputs, seeds),
from the same seed, and compare state_dict keys, shapes, dtypes and values, then the forward
outputs. The original is built and run twice: if it disagrees with itself it is
nondeterministic and cannot be compared.

``run_workers`` runs a worker script over jobs in fresh interpreters, restarting after a
crash. The comparison functions run inside such a worker (they import torch lazily, so the
drivers do not need it).
"""

from __future__ import annotations

import inspect
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

EXACT = (0.0, 0.0)
"""(rtol, atol): bit-identical."""
TIGHT = (1e-6, 1e-7)
"""(rtol, atol) a value may differ by and still count as identical (reported as inexact)."""


# --------------------------------------------------------------------------- workers


def run_workers(
    worker: str,
    jobs: list[dict[str, Any]],
    env: dict[str, str],
    *,
    isolated: bool = True,
    timeout_s: float = 6 * 3600,
) -> list[dict[str, Any]]:
    """Run ``worker`` over ``jobs`` in fresh interpreters, restarting after a crash.

    The worker is called as ``python [-I] worker.py JOBS.json OUT.jsonl START`` and appends
    one JSON row with ``position`` per job; a job without a row after the interpreter ended
    is recorded as a crash and the next interpreter starts after it.
    """
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="nnrag-bench-") as folder:
        base = Path(folder)
        (base / "worker.py").write_text(worker, encoding="utf-8")
        (base / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
        empty = base / "empty"
        empty.mkdir()
        out = base / "out.jsonl"
        start = 0
        while start < len(jobs):
            command = [sys.executable, *(["-I"] if isolated else [])]
            command += [str(base / "worker.py"), str(base / "jobs.json"), str(out), str(start)]
            subprocess.run(command, cwd=empty, env=env, check=False, timeout=timeout_s)
            if out.exists():
                for line in out.read_text().splitlines():
                    row = json.loads(line)
                    results[row["position"]] = row
            missing = [i for i in range(len(jobs)) if i not in results]
            if not missing:
                break
            crashed = missing[0]
            results[crashed] = {
                "position": crashed,
                "id": jobs[crashed]["id"],
                "ok": False,
                "category": "crash",
                "message": "the interpreter died",
            }
            start = crashed + 1
    return [results[i] for i in range(len(jobs))]


# --------------------------------------------------------------------------- comparing values


class Differences:
    """Where two values differ (``found``) or only agree within the tolerance (``inexact``)."""

    def __init__(self, rtol: float, atol: float) -> None:
        self.rtol, self.atol = rtol, atol
        self.found: list[str] = []
        self.inexact: list[str] = []

    def compare(self, a: Any, b: Any, path: str) -> None:
        """Record every difference between ``a`` and ``b`` under ``path``."""
        import numpy as np
        import torch

        if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            self._tensors(a, b, path)
            return
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            self._tensors(torch.from_numpy(a.copy()), torch.from_numpy(b.copy()), path)
            return
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            if list(a) != list(b):
                self.found.append(f"{path}: keys {list(a)[:6]} != {list(b)[:6]}")
                return
            for key in a:
                self.compare(a[key], b[key], f"{path}[{key!r}]")
            return
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if type(a).__qualname__ != type(b).__qualname__ or len(a) != len(b):
                self.found.append(
                    f"{path}: {type(a).__qualname__} of {len(a)} != "
                    f"{type(b).__qualname__} of {len(b)}"
                )
                return
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                self.compare(x, y, f"{path}[{i}]")
            return
        if isinstance(a, (set, frozenset)) and isinstance(b, (set, frozenset)):
            if a != b:
                self.found.append(
                    f"{path}: {sorted(map(repr, a))[:5]} != {sorted(map(repr, b))[:5]}"
                )
            return
        if isinstance(a, (bool, int, float, complex, str, bytes, type(None))):
            if type(a) is not type(b) or not (a == b or (a != a and b != b)):  # NaN == NaN
                self.found.append(f"{path}: {a!r} != {b!r}")
            return
        if isinstance(a, type) or inspect.isroutine(a):  # classes, functions: by name
            if getattr(a, "__qualname__", None) != getattr(b, "__qualname__", None):
                self.found.append(f"{path}: {a!r} != {b!r}")
            return
        if type(a).__qualname__ != type(b).__qualname__:
            self.found.append(f"{path}: {type(a).__qualname__} != {type(b).__qualname__}")
            return
        if hasattr(a, "to_dict") and hasattr(b, "to_dict"):  # pyg Data, ModelOutput
            self.compare(a.to_dict(), b.to_dict(), f"{path}.to_dict()")
            return
        if hasattr(a, "__dict__") and hasattr(b, "__dict__"):
            # a class of the source (pyg's SelectOutput, mmengine's InstanceData) is another
            # class object in the extracted file: compare the instances field by field
            self.compare(vars(a), vars(b), f"{path}.__dict__")
            return
        try:
            equal = bool(a == b)
        except Exception as error:
            self.found.append(f"{path}: {type(a).__qualname__} cannot be compared ({error})")
            return
        if not equal:
            self.found.append(f"{path}: {a!r} != {b!r}")

    def _tensors(self, a: Any, b: Any, path: str) -> None:
        import torch

        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            self.found.append(f"{path}: {type(a).__qualname__} != {type(b).__qualname__}")
            return
        if a.shape != b.shape or a.dtype != b.dtype:
            self.found.append(f"{path}: {a.dtype}{list(a.shape)} != {b.dtype}{list(b.shape)}")
            return
        if a.is_sparse or a.is_quantized or a.is_meta:
            a, b = a.to_dense() if a.is_sparse else a, b.to_dense() if b.is_sparse else b
        if torch.equal(a, b) or (
            a.is_floating_point() and torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)
        ):
            return
        if (a.is_floating_point() or a.is_complex()) and torch.allclose(
            a, b, rtol=self.rtol, atol=self.atol, equal_nan=True
        ):
            self.inexact.append(f"{path}: max |diff| {_max_diff(a, b):.3g}")
            return
        detail = f"max |diff| {_max_diff(a, b):.3g}" if a.is_floating_point() else "values"
        self.found.append(f"{path}: {detail}")


def _max_diff(a: Any, b: Any) -> float:
    import torch

    with torch.no_grad():
        both = torch.isfinite(a) & torch.isfinite(b)
        if not bool(both.any()):
            return float("nan")
        return float((a[both] - b[both]).abs().max())


def differences(a: Any, b: Any, path: str, tolerance: tuple[float, float]) -> Differences:
    """Compare ``a`` with ``b`` (see :class:`Differences`)."""
    found = Differences(*tolerance)
    found.compare(a, b, path)
    return found


# --------------------------------------------------------------------------- comparing blocks


def retarget(value: Any, mapping: Callable[[str], str]) -> Any:
    """``value`` (a recipe expression) with every ``nnrag_block:Q`` reference mapped."""
    if isinstance(value, list):
        return [retarget(v, mapping) for v in value]
    if isinstance(value, dict):
        if "__ref__" in value and str(value["__ref__"]).startswith("nnrag_block:"):
            return {"__ref__": mapping(str(value["__ref__"]).split(":", 1)[1])}
        return {k: retarget(v, mapping) for k, v in value.items()}
    return value


def seed_all(seed: int) -> None:
    """Seed torch's CPU generator, ``random`` and NumPy's global generator."""
    import numpy as np
    import torch

    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def build(cls: type, recipe: Mapping[str, Any], mapping: Callable[[str], str]) -> Any:
    """``cls`` built with the recipe's constructor arguments from the recipe's seed."""
    from nnrag.validate.probe.values import decode

    args = decode(retarget(list(recipe.get("init_args") or []), mapping))
    kwargs = {  # one value at a time, as the probe does (a plain dict is not an expression)
        k: decode(retarget(v, mapping)) for k, v in (recipe.get("init_kwargs") or {}).items()
    }
    if not (isinstance(args, list) and isinstance(kwargs, dict)):
        raise TypeError(f"recipe arguments decode to {type(args)}, {type(kwargs)}")
    seed_all(int(recipe.get("seed", 0)))
    return cls(*args, **kwargs)


def run(model: Any, recipe: Mapping[str, Any], mapping: Callable[[str], str]) -> Any:
    """``model`` in eval mode on the recipe's inputs (the probe's forward: no_grad)."""
    import torch

    from nnrag.validate.probe.inputs import build_inputs

    given = recipe.get("input_seed")
    seed = int(given if given is not None else recipe.get("seed", 0))
    args, kwargs = build_inputs(
        retarget(list(recipe.get("inputs") or []), mapping),
        retarget(dict(recipe.get("input_kwargs") or {}), mapping),
        seed,
    )
    model.eval()
    seed_all(seed)
    with torch.no_grad():
        return model(*args, **kwargs)


def compare_blocks(
    extracted: type,
    original: type,
    recipe: Mapping[str, Any],
    original_ref: Callable[[str], str],
    *,
    tolerance: tuple[float, float] = EXACT,
) -> dict[str, Any]:
    """Build and run the extracted and the original class (the original twice) with
    ``recipe``; ``original_ref`` maps a block-local qualified name to ``module:Qualname`` of
    the original. Returns ``{"status": ..., "message": ..., "differences": [...]}`` with
    status ``identical``, ``DIFFERENT``, ``original-nondeterministic``,
    ``original-ctor-fails``, ``original-forward-fails``, ``extracted-fails`` (the original
    runs) or ``both-fail``."""

    def local(name: str) -> str:
        return f"nnrag_block:{name}"

    try:
        mine = build(extracted, recipe, local)
    except Exception as error:
        return _extracted_failed(f"constructor: {error!r}", original, recipe, original_ref)
    try:
        theirs = build(original, recipe, original_ref)
        again = build(original, recipe, original_ref)
    except Exception as error:
        return {"status": "original-ctor-fails", "message": repr(error)[:300]}
    outputs = []
    for model, mapping in ((mine, local), (theirs, original_ref), (again, original_ref)):
        try:
            outputs.append(run(model, recipe, mapping))
        except Exception as error:
            if model is mine:
                return _extracted_failed(f"forward: {error!r}", original, recipe, original_ref)
            return {"status": "original-forward-fails", "message": f"forward: {error!r}"[:300]}
    # after forward: lazy modules are built
    a, b, c = mine.state_dict(), theirs.state_dict(), again.state_dict()
    unstable = differences(b, c, "state_dict", EXACT).found
    unstable += differences(outputs[1], outputs[2], "out", EXACT).found
    if unstable:
        # the original disagrees with itself from the same seed and inputs (RGATConv leaves
        # ``l2`` as torch.empty): values cannot be compared; reported as such
        return {
            "status": "original-nondeterministic",
            "message": "two runs of the original differ: " + "; ".join(unstable[:3]),
        }
    state = differences(a, b, "state_dict", tolerance)
    out = differences(outputs[0], outputs[1], "out", tolerance)
    found, inexact = state.found + out.found, state.inexact + out.inexact
    row: dict[str, Any] = {
        "tensors": len(a),
        "parameters": sum(int(v.numel()) for v in a.values() if hasattr(v, "numel")),
    }
    if found:
        kinds = [k for k, d in (("state_dict", state.found), ("outputs", out.found)) if d]
        row.update(
            status="DIFFERENT",
            message=f"{' and '.join(kinds)} differ: " + "; ".join(found[:3]),
            differences=found[:20],
        )
        return row
    row.update(status="identical", exact=not inexact, inexact=inexact[:10])
    return row


def _extracted_failed(
    message: str, original: type, recipe: Mapping[str, Any], original_ref: Callable[[str], str]
) -> dict[str, Any]:
    """``extracted-fails`` only if the original runs with the same recipe; else ``both-fail``
    (a lossy recipe, ``{"__repr__": ...}`` in place of a value, fails on both sides)."""
    try:
        run(build(original, recipe, original_ref), recipe, original_ref)
    except Exception as error:
        lossy = f"; recipe lossy at {recipe['lossy']}" if recipe.get("lossy") else ""
        return {
            "status": "both-fail",
            "message": f"{message} (the original too: {error!r}){lossy}"[:300],
        }
    return {"status": "extracted-fails", "message": message[:300]}
