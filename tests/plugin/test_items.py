"""Pure tests of pytest_nnrag.items: failure text, recipes, hook hints, results across xdist."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from nnrag.errors import ConfigError, ExtractionError
from nnrag.model import Recipe, ValidationResult
from nnrag.report import format_recipe, format_result
from nnrag.validate.results import result_from_dict, result_to_dict
from pytest_nnrag.items import BlockFailure, error_result, hints_from_hook, repos_node_id

FAILED = ValidationResult(
    block_id="timm:timm.layers.mlp:Mlp",
    depth="forward",
    stage_reached="instantiate",
    failed_stage="forward",
    category="input-shape",
    message="mat1 and mat2 shapes cannot be multiplied (2x3 and 8x8)\nsecond line",
    dependency_path=("Mlp", "helper"),
    recipe=Recipe(
        origin="synthesized",
        init_args=(8,),
        init_kwargs={"hidden": 16},
        inputs=({"shape": [2, 3], "dtype": "float32"},),
        attempts=3,
    ),
    duration_s=0.5,
    cached=True,
    file="/cache/blocks/timm/timm.layers.mlp/Mlp.py",
)


def test_failure_text_has_every_part() -> None:
    lines = format_result(FAILED).splitlines()
    assert lines == [
        "timm:timm.layers.mlp:Mlp did not reach forward: failed at stage forward "
        "(last passed: instantiate)",
        "category: input-shape",
        "message: mat1 and mat2 shapes cannot be multiplied (2x3 and 8x8)",
        "  second line",
        "dependency path: Mlp -> helper",
        "recipe: Mlp(8, hidden=16)(tensor([2, 3], float32)) [synthesized, 3 attempts]",
        "file: /cache/blocks/timm/timm.layers.mlp/Mlp.py",
        "(cached result; pass --nnrag-revalidate to validate again)",
    ]
    assert BlockFailure(FAILED).text == format_result(FAILED)


def test_failure_text_shows_the_last_block_frames_and_all_with_tb_long() -> None:
    frames = tuple(f"/b/Mlp.py:{n} in f{n}: x = f{n + 1}(x)" for n in range(1, 6))
    failed = replace(FAILED, frames=frames)
    lines = format_result(failed).splitlines()
    start = lines.index("traceback (frames in the block file, 2 earlier: --tb=long):")
    assert lines[start + 1 : start + 4] == [f"  {frame}" for frame in frames[-3:]]
    every = format_result(failed, all_frames=True).splitlines()
    start = every.index("traceback (frames in the block file):")
    assert every[start + 1 : start + 6] == [f"  {frame}" for frame in frames]


def test_recipe_of_one_attempt_and_long_values() -> None:
    recipe = Recipe(origin="hinted", init_kwargs={"names": ["x" * 80]}, attempts=1)
    text = format_recipe(recipe, "s:m:Block")
    assert text.startswith("Block(names=")
    assert text.endswith("...)() [hinted, 1 attempt]")


def test_result_crosses_json_unchanged() -> None:
    data = json.loads(json.dumps(result_to_dict(FAILED)))
    back = result_from_dict(data)
    assert back.block_id == FAILED.block_id
    assert (back.stage_reached, back.failed_stage, back.category) == (
        "instantiate",
        "forward",
        "input-shape",
    )
    assert back.dependency_path == FAILED.dependency_path
    assert back.cached is True
    assert back.file == FAILED.file


def test_error_result_is_an_internal_error() -> None:
    result = error_result("s:m:C", "forward", ExtractionError("boom", block_id="s:m:C"))
    assert result.category == "internal-error"
    assert result.message == "s:m:C: boom"
    assert not result.passed
    unexpected = error_result("s:m:C", "closed", KeyError("x"))
    assert unexpected.message == "KeyError: 'x'"


def test_a_bad_hook_answer_is_the_users_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        hints_from_hook("s:m:C", {"shapes": [1]})
    result = error_result("s:m:C", "forward", info.value)
    assert (result.category, result.failed_stage, result.passed) == ("config", "instantiate", False)
    assert "pytest_nnrag_block_inputs returned {'shapes': [1]} for s:m:C" in result.message


def test_hints_from_hook() -> None:
    hints = hints_from_hook(
        "s:m:C", {"args": [1], "kwargs": {"d": 2}, "inputs": [{"shape": [1, 2]}]}
    )
    assert hints.pattern == "s:m:C"
    assert hints.init_args == (1,)
    assert hints.init_kwargs == {"d": 2}
    assert hints.inputs == ({"shape": [1, 2]},)
    assert hints_from_hook("s:m:C", {}).inputs is None


@pytest.mark.parametrize("answer", [{"shapes": []}, [1, 2], "x"])
def test_bad_hook_answers_name_the_allowed_keys(answer: object) -> None:
    with pytest.raises(ConfigError, match="args, input_kwargs, inputs, kwargs") as info:
        hints_from_hook("s:m:C", answer)
    assert pickle.loads(pickle.dumps(info.value)).message == info.value.message


def test_repos_node_id() -> None:
    root = Path("/project")
    assert repos_node_id(root / "examples" / "repos.json", root) == "examples/repos.json"
    assert repos_node_id(Path("/elsewhere/repos.json"), root) == "repos.json"
