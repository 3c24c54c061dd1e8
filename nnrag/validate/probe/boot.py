"""Torch start-up for the sandbox server and its children (sandbox.py never imports torch)."""

from __future__ import annotations


def start_torch() -> str:
    """Import torch for this sandbox process, limit it to one thread, return its version."""
    import torch

    torch.set_num_threads(1)
    return str(torch.__version__)
