"""pytest plugin entry point: options and hooks that adapt pytest to nnrag's library calls."""

from __future__ import annotations
