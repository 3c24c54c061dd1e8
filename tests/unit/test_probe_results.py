"""Result cache: keys, JSON round trip, harvested recipes, re-opening (no processes, no torch)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nnrag.errors import CacheError
from nnrag.model import Recipe, Stage, ValidationResult
from nnrag.validate.results import (
    ResultCache,
    cache_key,
    result_from_dict,
    result_to_dict,
    validator_version,
)

RESULT = ValidationResult(
    block_id="timm:timm.layers.mlp:Mlp",
    depth="forward",
    stage_reached="instantiate",
    failed_stage="forward",
    category="input-shape",
    message="RuntimeError: mat1 and mat2 shapes cannot be multiplied",
    dependency_path=("Mlp", "to_2tuple"),
    recipe=Recipe(
        origin="synthesized",
        init_kwargs={"in_features": 32},
        inputs=({"shape": [2, 16, 32], "dtype": "float32"},),
        output_shapes=([2, 16, 32],),
        parameters=2112,
        attempts=3,
    ),
    timings={"parse": 0.001, "import": 0.01},
    duration_s=0.2,
    file="/tmp/Mlp.py",
)


def test_key_has_digest_depth_validator_and_torch() -> None:
    key = cache_key("sha256:abc", "forward", torch="2.13.0")
    assert key == ("sha256:abc", "forward", validator_version(), "2.13.0")
    assert cache_key("sha256:abc", "backward", torch="2.13.0") != key


def test_dict_round_trip_is_lossless() -> None:
    assert result_from_dict(result_to_dict(RESULT)) == RESULT


def test_put_get_marks_cached(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "results.sqlite")
    key = cache_key("sha256:abc", "forward", torch="2.13.0")
    assert cache.get(key) is None
    cache.put(key, RESULT)
    hit = cache.get(key)
    assert hit is not None
    assert hit.cached
    assert hit.recipe == RESULT.recipe
    assert hit.category == "input-shape"
    other = cache_key("sha256:abc", "forward", torch="2.14.0")
    assert cache.get(other) is None


def test_results_survive_reopening(tmp_path: Path) -> None:
    key = cache_key("sha256:abc", "forward", torch="2.13.0")
    first = ResultCache(tmp_path / "results.sqlite")
    first.put(key, RESULT)
    first.close()
    second = ResultCache(tmp_path / "results.sqlite")
    assert second.get(key) is not None


def test_two_handles_on_one_file_see_each_other(tmp_path: Path) -> None:
    key = cache_key("sha256:abc", "forward", torch="2.13.0")
    writer = ResultCache(tmp_path / "results.sqlite")
    reader = ResultCache(tmp_path / "results.sqlite")
    writer.put(key, RESULT)
    assert reader.get(key) is not None


def test_harvested_records_are_deduplicated_per_class(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "results.sqlite")
    record = {"class": "Mlp", "init_args": [16, 32], "init_kwargs": {}, "inputs": []}
    cache.add_harvest("timm", [record, dict(record), {"class": "Other", "init_args": []}])
    assert cache.harvested("timm", "Mlp") == [record]
    assert cache.harvested("torchvision", "Mlp") == []


def test_unusable_cache_file_is_a_cache_error(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    path.mkdir()  # a damaged file is rebuilt (tests/unit/test_sqlitedb.py); this cannot be
    with pytest.raises(CacheError, match="choose another one with --cache"):
        ResultCache(path)


def _timed(block_id: str, seconds: float, *, depth: Stage = "forward") -> ValidationResult:
    return dataclasses.replace(
        RESULT, block_id=block_id, depth=depth, duration_s=seconds, extract_s=0.5
    )


def test_durations_are_the_latest_recorded_per_block(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "results.sqlite")
    cache.put_extraction("src:m:Slow", "state-1", "sha256:aa", "Slow.py")
    cache.put_extraction("src:m:Slow", "state-2", "sha256:bb", "Slow.py")  # edited since
    cache.put_extraction("src:m:Quick", "state-2", "sha256:cc", "Quick.py")
    cache.put_extraction("src:m:Never", "state-2", "sha256:dd", "Never.py")
    cache.put(cache_key("sha256:aa+plugins:x", "forward", torch="1"), _timed("src:m:Slow", 3.0))
    cache.put(cache_key("sha256:bb+plugins:x", "forward", torch="2"), _timed("src:m:Slow", 9.0))
    cache.put(cache_key("sha256:cc+plugins:x", "forward", torch="2"), _timed("src:m:Quick", 0.1))
    cache.put(  # a later run at another depth does not replace the one at this depth
        cache_key("sha256:cc+plugins:x", "import", torch="2"),
        _timed("src:m:Quick", 5.0, depth="import"),
    )
    assert cache.durations("forward") == {"src:m:Quick": 0.6, "src:m:Slow": 9.5}
    assert cache.durations()["src:m:Quick"] == 5.5  # the latest of any depth
