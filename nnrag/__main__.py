"""``python -m nnrag``: the command line."""

from __future__ import annotations

from nnrag.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
