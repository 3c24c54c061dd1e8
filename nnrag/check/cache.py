"""The per-file cache of static check findings, keyed by content, check code and Python."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from nnrag.check.static import CHECK_MODULES, is_installed
from nnrag.diagnostics import restore
from nnrag.model import Diagnostic

__all__ = ["CheckCache"]


class CheckCache:
    """The static findings of file contents already checked, one JSON file each in a folder.

    A key is the SHA-256 of the file's bytes, the source of :data:`CHECK_MODULES` and the
    Python version (its standard library). An entry also records which third-party modules
    the import check looked up and whether they were installed; a hit whose lookups now
    answer differently is a miss, so a cached result is always what a fresh check returns.
    Unreadable or unwritable entries are misses, never errors.
    """

    def __init__(self, folder: Path) -> None:
        from nnrag.versions import code_fingerprint

        self.folder = folder
        self._salt = "\0".join(
            (code_fingerprint(*CHECK_MODULES), sys.version, sys.implementation.cache_tag or "")
        ).encode()

    def key(self, data: bytes) -> str:
        """The entry name of a file's content."""
        return hashlib.sha256(self._salt + b"\0" + data).hexdigest()

    def get(self, key: str) -> tuple[Diagnostic, ...] | None:
        """The findings stored under ``key``, if any and still exact."""
        try:
            entry = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
            probes: dict[str, bool] = entry["installed"]
            if any(is_installed(top) != installed for top, installed in probes.items()):
                return None
            return tuple(
                restore(code, message, line=line, col=col)
                for code, message, line, col in entry["findings"]
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, findings: tuple[Diagnostic, ...], probes: Mapping[str, bool]) -> None:
        """Store the findings of a fresh check (atomically; silently skipped if impossible)."""
        entry = {
            "findings": [[f.code, f.message, f.line, f.col] for f in findings],
            "installed": dict(probes),
        }
        path = self.folder / f"{key}.json"
        partial = path.with_name(f"{key}.{os.getpid()}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps(entry), encoding="utf-8")
            os.replace(partial, path)
        except OSError:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
