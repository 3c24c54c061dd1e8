"""nnrag: dependency-closed, validated nn.Module blocks from PyTorch repositories."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
