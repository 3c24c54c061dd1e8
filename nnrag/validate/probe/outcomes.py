"""Sandbox child: what a run gave: output tensors and digests, failure categories and frames."""

from __future__ import annotations

import contextlib
import dis
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from nnrag.validate.probe.reshape import SHAPE_WORDS
from nnrag.validate.refusals import BLOCK_MODULE


def tensors_in(value: Any, depth: int = 0) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 4:
        return []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_in(v, depth + 1)]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in tensors_in(v, depth + 1)]
    if hasattr(value, "__dataclass_fields__") or (
        hasattr(value, "__dict__") and not isinstance(value, nn.Module)
    ):
        try:
            return [t for v in vars(value).values() for t in tensors_in(v, depth + 1)]
        except TypeError:
            return []
    return []


def shapes_of(value: Any, depth: int = 0) -> object:
    if isinstance(value, torch.Tensor):
        return list(value.shape)
    if isinstance(value, (list, tuple)) and depth < 3:
        return [shapes_of(v, depth + 1) for v in value]
    if isinstance(value, Mapping) and depth < 3:
        return {str(k): shapes_of(v, depth + 1) for k, v in value.items()}
    return type(value).__name__


INSTALL_ADVICE = re.compile(r"\bpip3? install\b|\bplease install\b", re.IGNORECASE)
"""An error that tells the user to install a package: the block needs one that is absent."""
REGISTRY_MISS = re.compile(
    r"\bregist(?:ry|ered)\b|no object named|not (?:a )?(?:supported|valid|known) type",
    re.IGNORECASE,
)
"""What a registry says when a type string is not in it (``'BN is not in the model
registry'``, ``"No object named 'X' found in 'Y' registry!"``, ``'Foo' is not registered``)."""


def registry_miss(error: BaseException) -> bool:
    """Whether ``error`` is a registry's lookup of a type string it lacks."""
    return isinstance(error, LookupError) and REGISTRY_MISS.search(str(error)) is not None


def classify(
    error: BaseException,
    stage: str,
    violations: list[str],
    source_packages: frozenset[str] = frozenset(),
) -> str:
    """The failure category for an exception raised in ``stage``."""
    text = f"{type(error).__name__}: {error}"
    if violations:
        return "sandbox-violation"
    if isinstance(error, MemoryError) or re.search(
        r"can't allocate memory|not enough memory|DefaultCPUAllocator", text
    ):
        return "memory"
    if re.search(
        r"undefined symbol|\.so\b|torch\.ops\.|load_library|cpp_extension|Could not run '"
        r"|No such operator|'_OpNamespace'|C\+\+ (?:ops|extension)",
        text,
    ):
        return "native-op"
    if isinstance(error, ModuleNotFoundError):  # at import, or a lazy import in a method
        name = error.name or ""
        if "." in name and name.rsplit(".", 1)[-1].startswith("_"):
            # a package's private submodule that is absent: its compiled extension
            # (``mmcv._ext`` of a pure-Python build, ``torch_scatter._C``)
            return "native-op"
        top = name.split(".")[0]
        return "source-import" if top in source_packages else "missing-external"
    if isinstance(error, ImportError) or INSTALL_ADVICE.search(str(error)):
        # "requires 'pyg-lib'", "Please install InplaceABN", a RuntimeError saying
        # "Please `pip install transformers` to use ..." where the block checks for it
        return "missing-external"
    if lacking_module_attribute(error, source_packages) is not None:
        return "missing-external"  # ``np.float`` on numpy 2: another release is installed
    if uninstalled_local(error, source_packages) is not None:
        return "missing-external"  # its import failed under a handler that went on
    if registry_miss(error):
        return "dynamic-registry"  # a type string looked up in a registry that lacks it
    if stage == "import":
        if isinstance(error, OSError):
            return "resource-file"
        return "runtime-error"
    if stage == "instantiate":
        if isinstance(error, (FileNotFoundError, IsADirectoryError)):
            return "resource-file"
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            return "runtime-error"
        return "ctor-args"
    if isinstance(error, OutputError) and NON_FINITE in str(error):
        return "non-finite"
    if isinstance(error, (KeyboardInterrupt, SystemExit, OutputError)):
        return "runtime-error"
    if stage == "forward" and (
        isinstance(error, (IndexError, ValueError, TypeError)) or SHAPE_WORDS.search(text)
    ):
        return "input-shape"
    return "runtime-error"


NON_FINITE = "non-finite"


def unfilled_note(block: Any, *, limit: int = 4) -> str:
    """Why forward's output may be NaN: the block's floating parameters and buffers that are
    NaN throughout (memory the constructor never filled reads as NaN in the sandbox), and
    what to do; empty when there are none."""
    names = [
        name
        for name, tensor in (*block.named_parameters(), *block.named_buffers())
        if tensor.is_floating_point() and tensor.numel() and bool(torch.isnan(tensor).all())
    ]
    if not names:
        return ""
    shown = ", ".join(names[:limit]) + (
        f" and {len(names) - limit} more" if len(names) > limit else ""
    )
    return (
        f"; the constructor never fills {shown} (uninitialized memory reads as NaN in the "
        "sandbox, so the verdict does not depend on what the allocator returned): the code "
        "leaves them to a later initialization call; a block usable as built fills them in "
        "__init__"
    )


class OutputError(Exception):
    """Forward ran but returned no tensor or non-finite values."""


class RecipeError(Exception):
    """A hinted or recorded recipe names values that cannot be rebuilt."""


def output_digest(out: Any) -> str:
    """SHA-1 over the output tensors' shapes, dtypes and bytes (replays compare it)."""
    digest = hashlib.sha1(usedforsecurity=False)
    for tensor in tensors_in(out):
        value = tensor.detach().cpu().contiguous()
        digest.update(f"{list(value.shape)}{value.dtype}".encode())
        with contextlib.suppress(RuntimeError, TypeError):  # sparse, quantized: shape only
            digest.update(value.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def block_frames(error: BaseException | None, path: str) -> list[str]:
    """``file:line in function: code`` of the traceback's frames in the block file, in order."""
    if error is None or not path:
        return []
    frames = traceback.extract_tb(error.__traceback__)
    return [
        f"{f.filename}:{f.lineno} in {f.name}: {(f.line or '').strip()}"
        for f in frames
        if os.path.realpath(f.filename) == os.path.realpath(path)
    ]


_MODULE_LACKS = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")


def lacking_module_attribute(
    error: BaseException, source_packages: frozenset[str] = frozenset()
) -> tuple[str, str] | None:
    """``(module, attribute)`` when ``error`` says that a module of an installed package has
    no attribute the block reads (``np.float`` on numpy 2, an API another release has): what
    no input or argument changes. Not for the block file itself (a name looked up in its
    namespace), a module made at run time, or a source package imported by name."""
    if not isinstance(error, AttributeError):
        return None
    found = _MODULE_LACKS.match(str(error))
    if found is None:
        return None
    module, attribute = found.groups()
    top = module.partition(".")[0]
    if top in source_packages or top == BLOCK_MODULE or module not in sys.modules:
        return None
    return module, attribute


_UNBOUND_LOCAL = re.compile(
    r"cannot access local variable '(\w+)'|local variable '(\w+)' referenced before assignment"
)


def uninstalled_local(
    error: BaseException, source_packages: frozenset[str] = frozenset()
) -> str | None:
    """The package when ``error`` reads a local variable named like a top-level package
    that is not installed (``try: import librosa`` / ``except ImportError: print(...)``,
    then ``librosa.filters.mel(...)``): the import failed and the code went on."""
    if not isinstance(error, UnboundLocalError) or error.__traceback__ is None:
        return None
    found = _UNBOUND_LOCAL.search(str(error))
    name = next((g for g in found.groups() if g), "") if found else ""
    if not name or name in source_packages or name in sys.modules:
        return None
    last = error.__traceback__
    while last.tb_next is not None:
        last = last.tb_next
    if not any(  # the function that raised imports it
        step.opname == "IMPORT_NAME" and str(step.argval).partition(".")[0] == name
        for step in dis.get_instructions(last.tb_frame.f_code)
    ):
        return None
    try:
        missing = importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return None
    return name if missing else None


def describe(error: BaseException, source_packages: frozenset[str] = frozenset()) -> str:
    """``Type: message`` of ``error`` (cut at 600 characters), with the release to install
    where an installed package (not a source) lacks an attribute the block reads."""
    text = f"{type(error).__name__}: {error}"
    lacking = lacking_module_attribute(error, source_packages)
    if lacking is not None:
        module, attribute = lacking
        text += (
            f" (the installed {_release(module)} has no {attribute!r}: install the release "
            "the block was written for)"
        )
    package = uninstalled_local(error, source_packages)
    if package is not None:
        text += f" (the block imports {package!r}, which is not installed, and went on)"
    return text if len(text) < 600 else text[:600] + "..."


def _release(module: str) -> str:
    """``numpy 2.1.3``: the distribution of ``module``'s top-level package and its version,
    else the module's name."""
    top = module.partition(".")[0]
    for distribution in importlib.metadata.packages_distributions().get(top, ()):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return f"{distribution} {importlib.metadata.version(distribution)}"
    return module
