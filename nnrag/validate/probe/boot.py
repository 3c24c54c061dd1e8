"""Torch start-up for the sandbox server and its children (sandbox.py never imports torch)."""

from __future__ import annotations


def start_torch() -> str:
    """Import torch for this sandbox process, limit it to one thread, return its version."""
    import torch

    torch.set_num_threads(1)
    return str(torch.__version__)


def fill_uninitialized_memory() -> None:
    """Make memory torch hands out uninitialized read as NaN (floats) or the maximum (integers).

    ``nn.Parameter(torch.Tensor(n))`` or ``torch.empty(...)`` that a constructor never fills
    then gives the same result on every run and replay instead of whatever the allocator
    returned: torch's ``fill_uninitialized_memory``, which acts only under deterministic
    algorithms. ``warn_only``: an operator without a deterministic implementation
    (``put_``, ``MaxUnpool2d`` on the CPU) warns instead of raising. Set through ``torch._C``:
    ``torch.use_deterministic_algorithms`` also imports ``torch._inductor.config`` (about a
    second) only to set a flag ``torch.compile`` reads.
    """
    import torch

    torch._C._set_deterministic_algorithms(True, warn_only=True)
    torch._C._set_deterministic_fill_uninitialized_memory(True)
