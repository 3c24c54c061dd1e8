"""Config fields (table keys, size lists, base configs, parts, deep reads); named inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nnrag.model import ValidationResult
from nnrag.validate.sandbox import Sandbox
from tests.probing import probe

pytestmark = pytest.mark.integration


def config_of(result: ValidationResult) -> dict[str, Any]:
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.lossless, result.recipe.lossy
    config = result.recipe.init_kwargs["config"]
    assert isinstance(config, dict)
    return config


def sizes(expression: dict[str, Any]) -> dict[str, Any]:
    """The fields a recorded config call sets: through its constructor, or after it."""
    return {**expression.get("kwargs", {}), **expression.get("__set__", {})}


def test_a_none_field_used_as_a_table_key_gets_the_tables_first_key(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Settings:
        def __init__(self, width=64, kind=None):  # the caller (a model) sets ``kind``
            self.width = width
            self.kind = kind


    class Plain(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.lin = nn.Linear(config.width, config.width)

        def forward(self, x):
            return self.lin(x)


    KINDS = {"plain": Plain, "other": Plain}


    class Block(nn.Module):
        def __init__(self, config: Settings):
            super().__init__()
            self.inner = KINDS[config.kind](config)

        def forward(self, x):
            return self.inner(x)
    """
    config = config_of(probe(sandbox, tmp_path, code))
    assert config["__call__"] == {"__ref__": "nnrag_block:Settings"}
    assert config["__set__"]["kind"] == "plain"


def test_a_key_compared_unequal_is_the_default_path(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class FusedTable(dict):
        \"\"\"A registry of alternatives: the default ("plain") is not one of its keys.\"\"\"


    FUSED = FusedTable(fast=None)


    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.lin = nn.Linear(config.hidden_size, config.hidden_size)

        def forward(self, x):
            if self.config._impl != "plain":
                return FUSED[self.config._impl](x)
            return self.lin(x)
    """
    config = config_of(probe(sandbox, tmp_path, code))
    assert config["__call__"] == {"__ref__": "types:SimpleNamespace"}
    assert config["kwargs"]["_impl"] == "plain"  # private, but read as a key: given


def test_a_base_config_with_some_fields_gets_the_others_by_name(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class BaseConfig:
        \"\"\"Shared fields of every model's config; the width is the model's own.\"\"\"

        def __init__(self, chunk_size=0, is_decoder=False):
            self.chunk_size = chunk_size
            self.is_decoder = is_decoder


    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.chunk_size = config.chunk_size  # 0: no chunking; a width here would fail
            self.lin = nn.Linear(config.hidden_size, config.hidden_size)
            self.eps = config.layer_norm_eps

        def forward(self, x):
            if self.chunk_size:
                assert x.shape[1] % self.chunk_size == 0, "not a multiple of the chunk size"
            return self.lin(x)
    """
    config = config_of(probe(sandbox, tmp_path, code))
    assert config["__call__"] == {"__ref__": "nnrag_block:BaseConfig"}
    assert set(config["__set__"]) == {"hidden_size", "layer_norm_eps"}


def test_per_stage_heads_and_depths_are_shrunk_keeping_their_length(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class StagesConfig:
        def __init__(self, embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24)):
            self.embed_dim = embed_dim
            self.depths = list(depths)
            self.num_heads = list(num_heads)


    class Block(nn.Module):
        def __init__(self, config: StagesConfig):
            super().__init__()
            stages = []
            for i, (depth, heads) in enumerate(zip(config.depths, config.num_heads)):
                width = config.embed_dim * 2**i
                if width % heads:
                    raise ValueError(f"width {width} is not a multiple of {heads} heads")
                stages += [nn.Linear(width, width) for _ in range(depth)]
                stages.append(nn.Linear(width, 2 * width))
            self.stages = nn.Sequential(*stages[:-1])

        def forward(self, x):
            return self.stages(x)
    """
    shrunk = sizes(config_of(probe(sandbox, tmp_path, code)))
    assert shrunk["depths"] == [1, 1, 1, 1]
    assert len(shrunk["num_heads"]) == 4
    assert all(shrunk["embed_dim"] % h == 0 for h in shrunk["num_heads"])


def test_reads_are_followed_through_a_table_call_and_deep_hand_overs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Leaf(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.lin = nn.Linear(config.hidden_size, config.leaf_size)

        def forward(self, x):
            return self.lin(x)


    LEAVES = {"eager": Leaf}


    class Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.impl = LEAVES[config.impl](config)  # a call through a table

        def forward(self, x):
            return self.impl(x)


    class Layer(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.attn = Attention(config)

        def forward(self, x):
            return self.attn(x)


    class Stage(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.layer = Layer(config)

        def forward(self, x):
            return self.layer(x)


    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.stage = Stage(config)  # Block > Stage > Layer > Attention > Leaf

        def forward(self, x):
            return self.stage(x)
    """
    fields = config_of(probe(sandbox, tmp_path, code))["kwargs"]
    assert {"hidden_size", "leaf_size", "impl"} <= set(fields)
    assert fields["impl"] == "eager"


def test_an_indexed_config_field_is_a_list_beside_the_fields_parts_read(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Part(nn.Module):
        def __init__(self, config, width):
            super().__init__()
            self.lin = nn.Linear(width, width)
            self.scale = config.out_scale

        def forward(self, x):
            return self.lin(x) * self.scale


    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.parts = nn.Sequential(
                *(Part(config, config.widths[0]) for _ in range(len(config.widths)))
            )

        def forward(self, x):
            return self.parts(x)
    """
    fields = config_of(probe(sandbox, tmp_path, code))["kwargs"]
    assert isinstance(fields["widths"], list)
    assert "out_scale" in fields  # read by a part the config is handed to


def test_config_parts_are_rebuilt_small(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class PartConfig:
        def __init__(self, hidden_size=768, num_layers=12):
            self.hidden_size = hidden_size
            self.num_layers = num_layers


    class WholeConfig:
        def __init__(self, part=None, projection_dim=512):
            self.part = PartConfig(**(part or {}))
            self.projection_dim = projection_dim


    class Block(nn.Module):
        def __init__(self, config: WholeConfig):
            super().__init__()
            part = config.part
            self.layers = nn.Sequential(
                *(nn.Linear(part.hidden_size, part.hidden_size) for _ in range(part.num_layers))
            )
            self.proj = nn.Linear(part.hidden_size, config.projection_dim)

        def forward(self, x):
            return self.proj(self.layers(x))
    """
    config = config_of(probe(sandbox, tmp_path, code))
    part = config["__set__"]["part"]
    assert part["__call__"] == {"__ref__": "nnrag_block:PartConfig"}
    assert sizes(part)["hidden_size"] < 768
    assert sizes(part)["num_layers"] <= 2


def test_an_optional_input_the_blocks_error_names_is_given(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, vocab_size: int = 100, width: int = 8):
            super().__init__()
            self.embed = nn.Embedding(vocab_size, width)
            self.patch = nn.Conv2d(3, width, 4, stride=4)

        def forward(self, input_ids=None, pixel_values=None, labels=None):
            if pixel_values is None:
                raise ValueError("You have to specify pixel_values")
            text = self.embed(input_ids).mean(1)
            image = self.patch(pixel_values).flatten(2).mean(2)
            return text * image
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    pixels = result.recipe.input_kwargs["pixel_values"]
    assert isinstance(pixels, dict)
    assert pixels["shape"][1] == 3  # an image, not a copy of the token ids
    assert "labels" not in result.recipe.input_kwargs  # only what the error names


def test_sizes_go_through_the_constructor_so_derived_fields_follow(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class PyramidConfig:
        def __init__(self, embed_dim=96, depths=(2, 2, 6, 2)):
            self.embed_dim = embed_dim
            self.depths = list(depths)
            self.num_layers = len(self.depths)  # derived: stays consistent with depths
            self.hidden_size = embed_dim * 2 ** (self.num_layers - 1)


    class Block(nn.Module):
        def __init__(self, config: PyramidConfig):
            super().__init__()
            widths = [config.embed_dim * 2**i for i in range(config.num_layers)]
            self.stages = nn.Sequential(
                *(nn.Linear(w, 2 * w if i < len(widths) - 1 else w) for i, w in enumerate(widths))
            )
            self.norm = nn.LayerNorm(config.hidden_size)

        def forward(self, x):
            return self.norm(self.stages(x))
    """
    config = config_of(probe(sandbox, tmp_path, code))
    assert config["kwargs"]["embed_dim"] < 96  # through the constructor
    assert "num_layers" not in config.get("__set__", {})
    assert "hidden_size" not in config.get("__set__", {})


def test_a_configs_image_size_is_kept_for_its_windows(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class WindowConfig:
        def __init__(self, image_size=64, patch_size=4, window_size=4, stages=3, embed_dim=96):
            self.image_size = image_size
            self.patch_size = patch_size
            self.window_size = window_size
            self.stages = stages
            self.embed_dim = embed_dim


    class Block(nn.Module):
        def __init__(self, config: WindowConfig):
            super().__init__()
            self.config = config
            self.patch = nn.Conv2d(3, config.embed_dim, config.patch_size, config.patch_size)

        def forward(self, pixel_values):
            x = self.patch(pixel_values)
            for _ in range(self.config.stages):  # every stage must hold a whole window
                if min(x.shape[-2:]) < self.config.window_size:
                    raise ValueError("a stage is smaller than the attention window")
                x = nn.functional.avg_pool2d(x, 2)
            return x
    """
    config = config_of(probe(sandbox, tmp_path, code))
    assert "image_size" not in sizes(config)  # 64: 16, 8, 4 patches, each >= the window
    assert sizes(config)["embed_dim"] < 96


def test_a_base_config_sharing_only_methods_is_not_taken(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class FileConfig:
        \"\"\"A config file reader: its ``get`` is a method, not a field of the block's.\"\"\"

        def __init__(self, filename=None):
            self.filename = filename

        def get(self, key, default=None):
            return default


    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.lin = nn.Linear(config.hidden_size, config.hidden_size)
            self.get = config.get

        def forward(self, x):
            return self.lin(x)
    """
    config = config_of(probe(sandbox, tmp_path, code))
    assert config["__call__"] == {"__ref__": "types:SimpleNamespace"}
