"""Parsing many files at once: in this process when few, else in a pool of processes."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnrag.model import FileProblem, ModuleInfo, Settings

if TYPE_CHECKING:
    from nnrag.index.store import FileRow

PARALLEL_MIN_FILES = 48
"""Below this many files to parse, parse in this process (a pool costs more than it saves)."""


def analyze_all(
    source: str,
    root: Path,
    rows: Sequence[FileRow],
    data_of: Mapping[str, bytes],
    settings: Settings,
    *,
    progress: bool,
) -> list[str | FileProblem]:
    """Each file's encoded analysis or problem, in ``rows`` order (processes when many)."""
    jobs = settings.jobs or os.cpu_count() or 1
    items = [(r.path, r.module, r.is_package, data_of[r.path]) for r in rows]
    bar = _progress_bar(len(items), source) if progress and items else None
    try:
        if jobs <= 1 or len(items) < PARALLEL_MIN_FILES:
            results = []
            for item in items:
                results.append(_analyze_one(source, item))
                if bar is not None:
                    bar.update(1)
            return results
        import multiprocessing
        import threading
        from concurrent.futures import ProcessPoolExecutor

        size = max(4, len(items) // (jobs * 4))
        batches = [items[i : i + size] for i in range(0, len(items), size)]
        context = multiprocessing.get_context(
            "fork" if threading.active_count() == 1 else "forkserver"
        )
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = [pool.submit(_analyze_batch, source, batch) for batch in batches]
            out: list[str | FileProblem] = []
            for future in futures:
                part = future.result()
                out.extend(part)
                if bar is not None:
                    bar.update(len(part))
            return out
    finally:
        if bar is not None:
            bar.close()


def _progress_bar(total: int, source: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=f"indexing {source}", unit="file", leave=False)


def _analyze_one(source: str, item: tuple[str, str, bool, bytes]) -> str | FileProblem:
    """One file's analysis, encoded for the store (in the worker: it parallelizes too)."""
    from nnrag.index.store import encode_module
    from nnrag.index.units import analyze_module

    path, module, is_package, data = item
    try:
        result = analyze_module(
            source=source, module=module, path=path, data=data, is_package=is_package
        )
        return encode_module(result) if isinstance(result, ModuleInfo) else result
    except Exception as error:
        return FileProblem(
            source=source,
            path=path,
            message=f"internal error in nnrag while analyzing this file (please report it): "
            f"{type(error).__name__}: {error}",
        )


def _analyze_batch(
    source: str, batch: Sequence[tuple[str, str, bool, bytes]]
) -> list[str | FileProblem]:
    return [_analyze_one(source, item) for item in batch]
