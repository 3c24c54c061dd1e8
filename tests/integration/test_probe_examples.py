"""Docstring examples, optional forward arguments and shared-shape repairs, each rule on a
small hand-made module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.model import ValidationResult
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import run_validation

pytestmark = pytest.mark.integration

HEAD = "import torch\nfrom torch import nn\n\n"


def probe(sandbox: Sandbox, tmp_path: Path, code: str) -> ValidationResult:
    path = tmp_path / "Block.py"
    path.write_text(HEAD + textwrap.dedent(code))
    result, _ = run_validation(path, block_id="t:m:Block", class_name="Block", sandbox=sandbox)
    return result


def test_the_docstring_example_gives_the_constructor_call_and_the_inputs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = '''
    class Block(nn.Module):
        """Stages described by a nested config that only its author can write.

        Example:
            >>> from somewhere_not_installed import Block
            >>> import torch
            >>> spec = dict(
            >>>     stem=dict(width=6),
            >>>     stages=dict(widths=(6, 10), kinds=("wide", "narrow")))
            >>> self = Block(spec)
            >>> self.eval()
            >>> out = self(torch.rand(1, 3, 9, 9))
            >>> print(out.shape)
            torch.Size([1, 10, 9, 9])
        """

        KINDS = {"wide": 3, "narrow": 1}

        def __init__(self, spec):
            super().__init__()
            widths = spec["stages"]["widths"]
            assert sum(widths) == 16 and len(widths) == len(spec["stages"]["kinds"])
            layers, width = [nn.Conv2d(3, spec["stem"]["width"], 1)], spec["stem"]["width"]
            for out, kind in zip(widths[1:], spec["stages"]["kinds"][1:]):
                k = self.KINDS[kind]
                layers.append(nn.Conv2d(width, out, k, padding=k // 2))
                width = out
            self.body = nn.Sequential(*layers)

        def forward(self, x):
            assert x.shape[-1] == 9, "the example's size"
            return self.body(x)
    '''
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.lossless
    spec = result.recipe.init_args[0]["__dict__"]
    assert spec["stages"]["__dict__"]["widths"] == {"__tuple__": [6, 10]}
    assert [i["shape"] for i in result.recipe.inputs] == [[1, 3, 9, 9]]


def test_a_key_the_example_config_lacks_is_added_by_its_name(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = '''
    class Block(nn.Module):
        """A block read from a plain dict.

        >>> m = Block(dict(width=8, kind="x"))
        """

        TABLE = {"x": 1}

        def __init__(self, extra):
            super().__init__()
            self.lin = nn.Linear(extra["width"] * self.TABLE[extra["kind"]], 8)
            self.drop = nn.Dropout(extra["drop_rate"])

        def forward(self, x):
            return self.drop(self.lin(x))
    '''
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    extra = result.recipe.init_args[0]["__dict__"]
    assert extra == {"width": 8, "kind": "x", "drop_rate": 0.0}


def test_optional_forward_arguments_used_as_values_are_given(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, dim: int = 8):
            super().__init__()
            self.q = nn.Linear(dim, dim)

        def forward(self, x, pos=None, scale: float = 1.0, mask=None):
            out = self.q(x + pos) * scale  # pos is needed although it defaults to None
            return out.masked_fill(~mask[..., None], 0.0)
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    x, pos, scale, mask = result.recipe.inputs
    assert pos["shape"] == x["shape"]
    assert scale == 1.0  # a literal default between them is kept
    assert mask["dtype"] == "bool"
    assert mask["shape"] == x["shape"][:2]  # one flag per token


def test_a_repair_of_same_shaped_inputs_is_also_tried_on_all_but_the_first(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(24)
            self.kv = nn.Linear(6, 24)  # the memory is narrower than the queries

        def forward(self, x, memory):
            return self.norm(x) + self.kv(memory).mean(1, keepdim=True)
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    x, memory = result.recipe.inputs
    assert x["shape"][-1] == 24
    assert memory["shape"][-1] == 6


def test_a_config_read_by_nested_attributes_is_built_from_what_is_read(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, cfg):  # only a config path: cfg.MODEL.HEAD.NUM_CLASSES
            super().__init__()
            width = cfg.MODEL.STEM.WIDTH
            self.lin = nn.Linear(width, cfg.MODEL.HEAD.NUM_CLASSES)
            self.act = cfg.MODEL.HEAD.ACT

        def forward(self, x):
            return self.lin(x)
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.lossless
    model = result.recipe.init_kwargs["cfg"]["kwargs"]["MODEL"]["kwargs"]
    assert set(model) == {"STEM", "HEAD"}
    assert model["HEAD"]["kwargs"] == {"ACT": "relu", "NUM_CLASSES": 10}


def test_a_dict_config_read_by_nested_subscripts_is_built_through_aliases(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, extra):
            super().__init__()
            stage = extra["stage1"]
            self.convs = nn.ModuleList(
                nn.Conv2d(stage["num_channels"][i], stage["num_channels"][i], 3, padding=1)
                for i in range(stage["num_branches"])
            )
            self.drop = nn.Dropout(extra["drop_rate"])

        def forward(self, x):
            return self.drop(self.convs[0](x))
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    extra = result.recipe.init_kwargs["extra"]["__dict__"]
    assert extra["drop_rate"] == 0.0
    stage = extra["stage1"]["__dict__"]
    assert len(stage["num_channels"]) == 2
    assert stage["num_branches"] == 2


def test_a_required_mask_gets_a_mask_of_the_tokens(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, dim: int = 8):
            super().__init__()
            self.v = nn.Linear(dim, dim)

        def forward(self, x, mask):  # a mask the block cannot run without
            return self.v(x) * mask.unsqueeze(-1)
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    x, mask = result.recipe.inputs
    assert mask["dtype"] == "bool"
    assert mask["shape"] == x["shape"][:2]
