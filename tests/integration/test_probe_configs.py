"""Config-driven construction and output checks, each rule on a small hand-made module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.model import ValidationResult
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import run_validation
from tests import probing

pytestmark = pytest.mark.integration

HEAD = "import dataclasses\n\nimport torch\nfrom torch import nn\n\n"


def probe(sandbox: Sandbox, tmp_path: Path, code: str, name: str = "Block") -> ValidationResult:
    return probing.probe(sandbox, tmp_path, code, name, head=HEAD)


kwargs = probing.passed_kwargs


def test_unannotated_config_is_the_class_whose_attributes_are_read(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Hyper:  # not named like a config: found by the attributes the block reads
        def __init__(self, hidden_size=768, num_heads=12, vocab_size=30000):
            self.hidden_size = hidden_size
            self.num_heads = num_heads
            self.vocab_size = vocab_size


    class Unrelated:
        def __init__(self, path="x"):
            self.path = path


    class Block(nn.Module):
        def __init__(self, settings):
            super().__init__()
            self.embed = nn.Embedding(settings.vocab_size, settings.hidden_size)
            self.attn = nn.MultiheadAttention(settings.hidden_size, settings.num_heads)

        def forward(self, ids):
            return self.embed(ids)
    """
    settings = kwargs(probe(sandbox, tmp_path, code))["settings"]
    assert settings["__call__"] == {"__ref__": "nnrag_block:Hyper"}
    shrunk = {**settings.get("kwargs", {}), **settings.get("__set__", {})}
    assert shrunk["hidden_size"] < 768
    assert shrunk["vocab_size"] < 30000


def test_dataclass_config_built_from_defaults_and_shrunk(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    @dataclasses.dataclass
    class Options:
        width: int = 512
        depth: int = 12


    class Block(nn.Module):
        def __init__(self, options: Options):
            super().__init__()
            self.layers = nn.Sequential(*[nn.Linear(options.width, options.width)] * options.depth)

        def forward(self, x):
            return self.layers(x)
    """
    options = kwargs(probe(sandbox, tmp_path, code))["options"]
    assert options["__call__"] == {"__ref__": "nnrag_block:Options"}
    assert {**options.get("kwargs", {}), **options.get("__set__", {})}["width"] < 512


def test_a_small_head_count_follows_the_shrunk_width(sandbox: Sandbox, tmp_path: Path) -> None:
    """``d_model`` 384 shrinks to the profile's width; ``encoder_attention_heads`` 6 must
    follow, or 6 no longer divides it (Whisper's config)."""
    code = """
    class AudioConfig:
        def __init__(self, d_model=384, encoder_attention_heads=6):
            self.d_model = d_model
            self.encoder_attention_heads = encoder_attention_heads


    class Block(nn.Module):
        def __init__(self, config: AudioConfig):
            super().__init__()
            self.attn = nn.MultiheadAttention(config.d_model, config.encoder_attention_heads)

        def forward(self, x):
            return self.attn(x, x, x)[0]
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message


REGISTRY = """
class Registry:
    def __init__(self, name):
        self.name = name
        self._module_dict = {}

    def register(self, cls):
        self._module_dict[cls.__name__] = cls
        return cls


LAYERS = Registry("layer")


def build_layer(cfg):
    cfg = dict(cfg)
    return LAYERS._module_dict[cfg.pop("type")](**cfg)


@LAYERS.register
class Wide(nn.Module):
    def __init__(self, in_channels, out_channels, groups, dilation_rate):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


@LAYERS.register
class Small(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return self.conv(x)


class Block(nn.Module):
    def __init__(self, body_cfg):
        super().__init__()
        self.body = build_layer(body_cfg)

    def forward(self, x):
        return self.body(x)
"""


def test_registry_config_dict_from_the_smallest_carried_type(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    body = kwargs(probe(sandbox, tmp_path, REGISTRY))["body_cfg"]
    assert body == {"__dict__": {"type": "Small", "channels": 32}}


def test_module_parameter_of_an_abstract_base_gets_a_concrete_subclass(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Base(nn.Module):
        def forward(self, x):
            raise NotImplementedError


    class Twice(Base):
        def __init__(self, scale: float = 2.0):
            super().__init__()
            self.scale = scale

        def forward(self, x):
            return x * self.scale


    class Block(nn.Module):
        def __init__(self, inner: Base, act: nn.Module):
            super().__init__()
            self.inner, self.act = inner, act
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return self.act(self.inner(self.lin(x)))
    """
    found = kwargs(probe(sandbox, tmp_path, code))
    assert found["inner"]["__call__"] == {"__ref__": "nnrag_block:Twice"}
    assert found["act"]["__call__"] == {"__ref__": "torch.nn.modules.activation:ReLU"}


def test_non_finite_outputs_are_retried_then_their_own_category(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return self.lin(x) / 0.0
    """
    result = probe(sandbox, tmp_path, code)
    assert (result.failed_stage, result.category) == ("forward", "non-finite")
    assert result.recipe is not None
    assert result.recipe.input_seed == result.recipe.seed + 1  # retried once, other inputs


def test_non_finite_for_one_draw_passes_with_the_other(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            first = float(x.flatten()[0])  # seed 0's first draw: -1.126 (1.541 under 16 values)
            out = self.lin(x)
            return out / 0.0 if -1.3 < first < 0.0 or first > 1.0 else out  # seed 1's: not
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.input_seed == result.recipe.seed + 1


def test_a_size_passed_beside_a_config_stays_a_size(sandbox: Sandbox, tmp_path: Path) -> None:
    code = REGISTRY.replace(
        """class Block(nn.Module):
    def __init__(self, body_cfg):
        super().__init__()
        self.body = build_layer(body_cfg)""",
        """def build_sized(cfg, channels):
    return nn.Conv2d(channels, channels, 1)


class Block(nn.Module):
    def __init__(self, body_cfg, in_channels):
        super().__init__()
        self.body = build_layer(body_cfg)
        self.mix = build_sized(None, in_channels)""",
    )
    found = kwargs(probe(sandbox, tmp_path, code))
    assert isinstance(found["in_channels"], int)
    assert found["body_cfg"] == {"__dict__": {"type": "Small", "channels": 32}}


def test_config_the_closure_does_not_carry_is_built_from_the_attributes_read(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.dense = nn.Linear(config.hidden_size, config.hidden_size)
            self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.drop = nn.Dropout(config.hidden_dropout_prob)

        def forward(self, x):
            return self.drop(self.norm(self.dense(x)))
    """
    config = kwargs(probe(sandbox, tmp_path, code))["config"]
    assert config["__call__"] == {"__ref__": "types:SimpleNamespace"}
    assert config["kwargs"] == {
        "hidden_dropout_prob": 0.0,
        "hidden_size": 64,
        "layer_norm_eps": 1e-5,
    }


def test_an_all_optional_forward_gets_its_first_input(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, vocab_size: int = 100, width: int = 8):
            super().__init__()
            self.embed = nn.Embedding(vocab_size, width)

        def forward(self, input_ids=None, inputs_embeds=None, mask=None):
            if inputs_embeds is None:
                inputs_embeds = self.embed(input_ids)
            return inputs_embeds
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    (ids,) = result.recipe.inputs
    assert isinstance(ids, dict)
    assert ids["dtype"] == "int64"  # token ids for an embedding-first block


def test_config_attributes_read_where_the_config_is_handed_on(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    def make_act(settings):
        return nn.ReLU() if settings.act_name == "relu" else nn.GELU()


    class Part(nn.Module):
        def __init__(self, settings, width):
            super().__init__()
            self.settings = settings
            self.lin = nn.Linear(width, settings.inner_size)
            self.act = make_act(settings)

        def forward(self, x):
            if isinstance(self.settings.hidden_act, str):
                x = self.act(x)
            return x * self.settings.out_scale


    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.part = Part(config, width=config.hidden_size)
            self.opt = getattr(config, "optional_flag", None)  # has a default: not needed

        def forward(self, x):
            return self.part(x)
    """
    config = kwargs(probe(sandbox, tmp_path, code))["config"]
    assert config["__call__"] == {"__ref__": "types:SimpleNamespace"}
    fields = config["kwargs"]
    assert set(fields) == {"act_name", "hidden_act", "hidden_size", "inner_size", "out_scale"}
    assert fields["hidden_act"] == "relu"  # config fields are data: an activation by name
    assert isinstance(fields["hidden_size"], int)


def harvested_classes(sandbox: Sandbox, tmp_path: Path, code: str) -> list[str]:
    """Validate ``Block`` of ``code`` with the harvest on; it must pass. The classes whose
    calls the run recorded."""
    path = tmp_path / "Block.py"
    path.write_text(HEAD + textwrap.dedent(code))
    result, harvested = run_validation(
        path, block_id="t:m:Block", class_name="Block", sandbox=sandbox, harvest=True
    )
    assert result.passed, result.message
    return [record["class"] for record in harvested]


def test_harvest_keeps_the_method_resolution_of_classes_without_their_own_methods(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Base(nn.Module):
        \"\"\"A base without ``__init__`` or ``forward`` of its own, listed first.\"\"\"


    class Stack(Base, nn.Sequential):  # forward: nn.Sequential's
        def __init__(self, width):
            super().__init__(nn.Linear(width, width), nn.ReLU())


    class Block(nn.Module):
        def __init__(self, width: int = 8):
            super().__init__()
            self.body = Stack(width)

        def forward(self, x):
            return self.body(x)
    """
    assert harvested_classes(sandbox, tmp_path, code) == ["Stack"]


def test_harvesting_a_part_called_with_complex_tensors_does_not_fail_the_block(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """pykeen's RotatE hands complex embeddings to its interaction: recording that call (a
    spec's ``high`` is ``max() + 1`` for integer tensors) must not raise ``max_all not
    implemented for 'ComplexFloat'`` into the block; the call is recorded without data."""
    code = """
    class Rotate(nn.Module):
        def forward(self, h, r):
            return (h * r).real


    class Block(nn.Module):
        def __init__(self, width: int = 8):
            super().__init__()
            self.proj = nn.Linear(width, 2 * width)
            self.rotate = Rotate()

        def forward(self, x):
            h = torch.view_as_complex(self.proj(x).view(*x.shape, 2))
            return self.rotate(h, h)
    """
    assert harvested_classes(sandbox, tmp_path, code) == ["Rotate"]


def test_an_integer_checked_against_a_table_takes_its_smallest_key(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Net(nn.Module):
        arch_settings = {50: (1, 2), 18: (1, 1), 101: (2, 3)}

        def __init__(self, depth, width=8):
            super().__init__()
            if depth not in self.arch_settings:
                raise KeyError(f"invalid depth {depth}")
            self.body = nn.Sequential(*[nn.Linear(width, width)] * self.arch_settings[depth][0])

        def forward(self, x):
            return self.body(x)


    class Block(Net):
        def __init__(self, extra=None, **kwargs):  # depth reaches Net through **kwargs
            super().__init__(**kwargs)
    """
    assert kwargs(probe(sandbox, tmp_path, code))["depth"] == 18


def test_an_integer_unpacked_as_a_pair_becomes_a_pair(sandbox: Sandbox, tmp_path: Path) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, window_size, dim: int = 8):
            super().__init__()
            self.window_size = window_size
            wh, ww = self.window_size
            self.table = nn.Parameter(torch.zeros(wh * ww, dim))

        def forward(self, x):
            return x + self.table.sum()
    """
    assert kwargs(probe(sandbox, tmp_path, code))["window_size"] == {"__tuple__": [4, 4]}


def test_a_parameter_read_for_class_data_gets_the_file_class_carrying_it(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Wide(nn.Module):
        expansion = 4

        def __init__(self, inplanes, planes, extra):
            super().__init__()
            self.lin = nn.Linear(inplanes, planes * self.expansion)

        def forward(self, x):
            return self.lin(x)


    class Basic(nn.Module):
        expansion = 1

        def __init__(self, inplanes, planes):
            super().__init__()
            self.lin = nn.Linear(inplanes, planes)

        def forward(self, x):
            return self.lin(x)


    class Block(nn.Module):
        def __init__(self, block, planes: int = 8):
            super().__init__()
            self.layers = self._make(block, planes)

        def _make(self, kind, planes):
            return nn.Sequential(kind(planes, planes), nn.Linear(planes * kind.expansion, planes))

        def forward(self, x):
            return self.layers(x)
    """
    assert kwargs(probe(sandbox, tmp_path, code))["block"] == {"__ref__": "nnrag_block:Basic"}


def test_a_module_parameter_whose_attributes_are_read_gets_the_file_module_setting_them(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Other(nn.Module):
        def __init__(self, width: int):
            super().__init__()
            self.lin = nn.Linear(width, width)

        def forward(self, x):
            return self.lin(x)


    class Memory(nn.Module):
        def __init__(self, width: int, layers: int = 1):
            super().__init__()
            self.d_model = width
            self.lin = nn.Linear(width, width)

        def forward(self, x):
            return self.lin(x)


    class Block(nn.Module):
        def __init__(self, memory, head: nn.Module):
            super().__init__()
            self.memory = memory
            self.head = head
            self.out = nn.Linear(memory.d_model, head.d_model)

        def forward(self, x):
            return self.out(self.head(self.memory(x)))
    """
    found = kwargs(probe(sandbox, tmp_path, code))
    for name in ("memory", "head"):
        assert found[name]["__call__"] == {"__ref__": "nnrag_block:Memory"}


def test_a_list_where_a_tensor_was_wanted_becomes_the_tensor(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    from typing import Tuple


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x: Tuple[torch.Tensor, ...]) -> Tuple[torch.Tensor, ...]:
            return (self.conv(x),)  # the annotation says a tuple; the code wants one tensor
    """
    result = probe(sandbox, tmp_path, code)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.inputs[0]["shape"][1] == 3
