"""Lossless recipes: values as constructor expressions, a recipe for every outcome, replay."""

from __future__ import annotations

import collections
import dataclasses
import enum
import math
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import torch
from torch import nn

from nnrag.recipes import recipe_to_dict
from nnrag.validate.probe.values import SMALL_TENSOR, call, decode, encode, lossy, remember
from nnrag.validate.replay import differences
from nnrag.validate.sandbox import Sandbox
from tests.integration.test_validate import FakeWorkspace
from tests.probing import SPEC_PART as PART
from tests.probing import validate_text as validate

pytestmark = pytest.mark.integration


class Kind(enum.Enum):
    NODE = "node"


class Pair(NamedTuple):
    left: int
    right: float


@dataclasses.dataclass
class Sizes:
    width: int = 4
    names: tuple[str, ...] = ("a",)


def roundtrip(value: object) -> object:
    encoded = encode(value, strict=True)
    assert not lossy(encoded)
    return decode(encoded)


def test_plain_values_roundtrip_exactly() -> None:
    assert roundtrip(Kind.NODE) is Kind.NODE
    assert roundtrip(Pair(1, 2.5)) == Pair(1, 2.5)
    assert roundtrip(Sizes(8, ("x", "y"))) == Sizes(8, ("x", "y"))
    ordered = roundtrip(collections.OrderedDict(b=1, a=2))
    assert isinstance(ordered, collections.OrderedDict)
    assert list(ordered) == ["b", "a"]
    assert math.isnan(roundtrip(float("nan")))  # type: ignore[arg-type]  # roundtrip returns object; this one is a float
    assert roundtrip(torch.float16) is torch.float16
    assert roundtrip({"k": (1, [2, None])}) == {"k": (1, [2, None])}
    keyed = {("a", "to", "b"): torch.tensor([[0, 1], [1, 0]]), 3: "x"}
    rebuilt: Any = roundtrip(keyed)  # keys other than strings: a dict of pairs
    assert type(rebuilt) is dict
    assert list(rebuilt) == [("a", "to", "b"), 3]
    assert torch.equal(rebuilt[("a", "to", "b")], keyed[("a", "to", "b")])


def test_small_tensors_by_value_large_ones_by_their_expression() -> None:
    small = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    encoded = encode(small)
    assert isinstance(encoded, dict)
    assert encoded["data"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert torch.equal(decode(encoded), small)  # type: ignore[arg-type]  # decode returns object; this one is a tensor
    side = math.isqrt(SMALL_TENSOR) + 1
    eye = remember(torch.eye(side), call(torch.eye, [side]))
    assert encode(eye) == {"__call__": {"__ref__": "torch:eye"}, "args": [side]}
    assert torch.equal(decode(encode(eye)), torch.eye(side))  # type: ignore[arg-type]  # decode returns object; this one is a tensor


def test_objects_are_written_as_their_constructor_calls() -> None:
    layer = remember(nn.LayerNorm(8, eps=1e-3), call(nn.LayerNorm, [8], {"eps": 1e-3}, seed=0))
    encoded = encode({"norm": layer})
    rebuilt: Any = decode(encoded)
    assert isinstance(rebuilt["norm"], nn.LayerNorm)
    assert rebuilt["norm"].normalized_shape == (8,)
    assert rebuilt["norm"].eps == 1e-3
    unknown = encode(object())
    assert lossy([1, unknown]) == ["[1]"]
    with pytest.raises(TypeError):
        encode(object(), strict=True)


CONFIGURED = textwrap.dedent(
    """
    import torch
    from torch import nn


    class BlockConfig:
        def __init__(self, hidden_size=768, num_heads=12, dropout=0.0):
            self.hidden_size = hidden_size
            self.num_heads = num_heads
            self.dropout = dropout


    class Block(nn.Module):
        def __init__(self, config: BlockConfig, act: nn.Module, scale: torch.Tensor):
            super().__init__()
            self.proj = nn.Linear(config.hidden_size, config.hidden_size)
            self.act = act
            self.register_buffer("scale", scale)

        def forward(self, x):
            return self.act(self.proj(x)) * self.scale.mean()
    """
)


def test_passing_recipe_is_lossless_and_replays_the_same_outputs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    recorded = validate(sandbox, tmp_path, CONFIGURED)
    assert recorded.passed, recorded.message
    recipe = recorded.recipe
    assert recipe is not None
    assert recipe.lossless, recipe.lossy
    config = recipe.init_kwargs["config"]
    assert isinstance(config, dict)
    assert config["__call__"] == {"__ref__": "nnrag_block:BlockConfig"}
    shrunk = {**config.get("kwargs", {}), **config.get("__set__", {})}
    assert shrunk["hidden_size"] < 768  # shrunk (through its constructor), and the recipe says so
    assert recipe.output_digest
    replayed = validate(sandbox, tmp_path, CONFIGURED, replay=recipe_to_dict(recipe))
    assert differences(recorded, replayed) == ()
    assert replayed.recipe is not None
    assert replayed.recipe.output_digest == recipe.output_digest


RANDOM_AFTER_A_FAILED_TRY = textwrap.dedent(
    """
    import random

    import numpy
    import torch
    from torch import nn


    class Block(nn.Module):
        def forward(self, x):
            drawn = random.random() + float(numpy.random.rand())  # drawn on every try
            if x.dim() != 3:
                raise ValueError(f"expected a 3-D input, got {x.dim()}-D")
            return x * drawn
    """
)


def test_python_and_numpy_draws_replay_after_the_search_tried_other_inputs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    recorded = validate(sandbox, tmp_path, RANDOM_AFTER_A_FAILED_TRY)
    assert recorded.passed, recorded.message
    assert recorded.recipe is not None
    replayed = validate(
        sandbox, tmp_path, RANDOM_AFTER_A_FAILED_TRY, replay=recipe_to_dict(recorded.recipe)
    )
    assert differences(recorded, replayed) == ()


def test_instantiate_failure_keeps_the_constructor_call_it_tried(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = "from torch import nn\n\nclass Block(nn.Module):\n"
    code += "    def __init__(self, width: int):\n        raise ValueError('never')\n"
    recorded = validate(sandbox, tmp_path, code)
    assert (recorded.failed_stage, recorded.category) == ("instantiate", "ctor-args")
    assert recorded.recipe is not None
    assert recorded.recipe.origin == "synthesized"
    assert isinstance(recorded.recipe.init_kwargs["width"], int)
    replayed = validate(sandbox, tmp_path, code, replay=recipe_to_dict(recorded.recipe))
    assert differences(recorded, replayed) == ()


def test_forward_failure_replays_to_the_same_failure(sandbox: Sandbox, tmp_path: Path) -> None:
    code = CONFIGURED.replace("return self.act", "raise RuntimeError('boom'); return self.act")
    recorded = validate(sandbox, tmp_path, code)
    assert (recorded.failed_stage, recorded.category) == ("forward", "runtime-error")
    assert recorded.recipe is not None
    assert recorded.recipe.inputs
    replayed = validate(sandbox, tmp_path, code, replay=recipe_to_dict(recorded.recipe))
    assert differences(recorded, replayed) == ()


def test_replay_names_what_differs(sandbox: Sandbox, tmp_path: Path) -> None:
    recorded = validate(sandbox, tmp_path, CONFIGURED)
    assert recorded.recipe is not None
    changed = CONFIGURED.replace("* self.scale.mean()", "* 2.0 * self.scale.mean()")
    replayed = validate(sandbox, tmp_path, changed, replay=recipe_to_dict(recorded.recipe))
    assert [d.split(":")[0] for d in differences(recorded, replayed)] == ["output values"]


def test_workspace_replay(tmp_path: Path) -> None:
    workspace = FakeWorkspace(tmp_path, CONFIGURED)
    try:
        replay = workspace.replay("Block")
        assert replay.recorded.passed, replay.recorded.message
        assert replay.reproduced, replay.differences
    finally:
        workspace.close()


EXACT = textwrap.dedent(
    """
    from torch import nn


    class Block(nn.Module):
        def __init__(self, spec):
            super().__init__()
            rows, cols = (int(v) for v in spec.split("x"))
            self.lin = nn.Linear(rows, cols)

        def forward(self, x):
            return self.lin(x)
    """
)


def test_harvest_is_used_only_once_final_and_keys_the_result(tmp_path: Path) -> None:
    from nnrag.validate.stages import validate_block

    workspace = FakeWorkspace(tmp_path, EXACT)
    record = {
        "class": "Block",
        "init_args": ["3x5"],
        "init_kwargs": {},
        "inputs": [{"shape": [2, 3], "dtype": "float32"}],
        "input_kwargs": {},
    }
    try:
        cache = workspace.results()
        cache.add_harvest("src", [record])
        before = validate_block(workspace, "Block")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        assert not before.passed  # a harvest still being gathered is not used
        cache.complete_harvest("src", workspace.extraction_state())
        after = validate_block(workspace, "Block")  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
        assert after.passed, after.message
        assert not after.cached  # keyed by the harvest it used, not the earlier verdict
        assert after.recipe is not None
        assert after.recipe.origin == "harvested"
        assert validate_block(workspace, "Block").cached  # type: ignore[arg-type]  # FakeWorkspace: only what validate_block uses, not a full BlockSource
    finally:
        workspace.close()


HARVESTED_PART = PART + textwrap.dedent(
    """

    class Whole(nn.Module):
        def __init__(self):
            super().__init__()
            self.part = Part("3x5")

        def forward(self, x):
            return self.part(x)
    """
)


def validate_all(
    tmp_path: Path, code: str, capsys: pytest.CaptureFixture[str]
) -> dict[str, dict[str, Any]]:
    """``nnrag validate --all --json`` on a source whose one module is ``code``: its rows by
    class name."""
    import json

    from nnrag.cli import main

    if not (tmp_path / "repos.json").exists():
        (tmp_path / "hv").mkdir()
        (tmp_path / "hv" / "__init__.py").write_text("")
        (tmp_path / "hv" / "parts.py").write_text(code)
        (tmp_path / "repos.json").write_text(
            json.dumps({"sources": [{"name": "hv", "path": ".", "paths": ["hv"]}]})
        )
    args = ["validate", "--all", "--repos", str(tmp_path / "repos.json"), "--json"]
    args += ["--cache", str(tmp_path / "cache"), "--timeout", "60"]
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)
    return {row["block_id"].rsplit(":", 1)[1]: row for row in rows}


def runs(tmp_path: Path) -> collections.Counter[str]:
    """How many results the cache holds per class (each a run in the sandbox)."""
    import contextlib
    import json
    import sqlite3

    with contextlib.closing(sqlite3.connect(tmp_path / "cache" / "results.sqlite")) as db:
        return collections.Counter(
            json.loads(value)["block_id"].rsplit(":", 1)[1]
            for (value,) in db.execute("SELECT value FROM results")
        )


def test_cli_validate_all_runs_the_library_harvest_pass_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``nnrag validate --all``: the first run already gives Part its harvested call (the
    pass is :func:`nnrag.validate.harvesting.harvest_with`, shared with the library)."""
    rows = validate_all(tmp_path, HARVESTED_PART, capsys)
    assert {name: row["passed"] for name, row in rows.items()} == {"Part": True, "Whole": True}
    assert rows["Part"]["recipe"]["origin"] == "harvested"
    # Part is a leaf (its file defines no other block's class): it ran once, in the pass's
    # second wave, with its final harvest; the verdict after the freeze was that result
    assert runs(tmp_path) == {"Part": 1, "Whole": 1}
    assert rows["Part"]["cached"]
    # frozen: the second run has no pass and the same verdicts
    again = validate_all(tmp_path, HARVESTED_PART, capsys)
    assert {name: row["cached"] for name, row in again.items()} == {"Part": True, "Whole": True}


CONTAINERS = PART + textwrap.dedent(
    """

    class Middle(nn.Module):
        def __init__(self, width=3):
            super().__init__()
            self.width = width
            self.part = Part("3x5")

        def forward(self, x):
            return self.part(x)


    class Strict(nn.Module):
        def __init__(self, spec):
            super().__init__()
            rows, cols = (int(v) for v in spec.split("x"))
            self.part = Part(f"{rows}x{cols}")

        def forward(self, x):
            return self.part(x)


    class Whole(nn.Module):
        def __init__(self):
            super().__init__()
            self.middle = Middle(4)
            self.strict = Strict("3x5")

        def forward(self, x):
            return self.strict(x) + self.middle(x)
    """
)


def test_a_container_keeps_the_verdict_of_its_recording_run_when_it_passed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Middle and Strict hold Part and are held by Whole: both run in the pass without their
    harvested calls (recording Part's). Middle passes so and keeps that verdict, run once;
    Strict fails so and runs again with the call Whole made (``Strict("3x5")``)."""
    rows = validate_all(tmp_path, CONTAINERS, capsys)
    assert all(row["passed"] for row in rows.values()), rows
    origins = {name: row["recipe"]["origin"] for name, row in rows.items()}
    assert origins == {
        "Part": "harvested",
        "Middle": "synthesized",
        "Strict": "harvested",
        "Whole": "synthesized",
    }
    assert runs(tmp_path) == {"Part": 1, "Middle": 1, "Strict": 2, "Whole": 1}
    again = validate_all(tmp_path, CONTAINERS, capsys)  # the same verdicts from the cache
    assert {name: row["recipe"]["origin"] for name, row in again.items()} == origins
    assert all(row["cached"] for row in again.values())
