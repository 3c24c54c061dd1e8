"""Which class a registry config dict names: the registry the build call names, a default the
file gives a parameter of the same name, a class of the parameter's kind; also where a
repair (not the first synthesis) gives the parameter, and where the build is a hand-over
deeper."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.recipes import recipe_to_dict
from nnrag.validate.probe.values import decode
from nnrag.validate.replay import differences
from nnrag.validate.sandbox import Sandbox
from tests.probing import TOY_REGISTRY, probe

pytestmark = pytest.mark.integration

BLOCKS = (
    """
from typing import Dict, Optional, Union

import torch
from torch import nn


"""
    + TOY_REGISTRY
    + """

MODELS = Registry("model")
TASK_UTILS = Registry("task util")
MODELS.register_module(module=nn.GELU)
MODELS.register_module(module=nn.Dropout)


class ConfigDict:
    \"\"\"Stand-in: the block only tests against it.\"\"\"


ConfigType = Union[ConfigDict, dict]
OptConfigType = Optional[ConfigType]


class BasePreprocessor(nn.Module):
    def forward(self, x):
        return x


@MODELS.register_module()
class DataPreprocessor(BasePreprocessor):
    def __init__(self):
        super().__init__()


class BaseHead(nn.Module):
    pass


@MODELS.register_module()
class ConvHead(BaseHead):
    def __init__(self, num_classes: int, channels: int = 8, train_cfg=None):
        super().__init__()
        self.conv = nn.Conv2d(channels, num_classes, 1)

    def forward(self, x):
        return self.conv(x)


@MODELS.register_module()
class ConvDecoder(nn.Module):
    def __init__(self, num_classes: int, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(channels, num_classes, 1)

    def forward(self, x):
        return self.conv(x)


@TASK_UTILS.register_module()
class Vocabulary:
    def __init__(self, size: int = 4):
        self.size = size


class Detector(nn.Module):
    \"\"\"The head's kind: a ``*Head`` (``DataPreprocessor`` is smaller, of another kind).\"\"\"

    def __init__(self, head: ConfigType, train_cfg: OptConfigType = None):
        super().__init__()
        head.update(train_cfg=train_cfg)
        self.head = MODELS.build(head)

    def forward(self, x):
        return self.head(x)


class Decoder(nn.Module):
    \"\"\"The registry the call names: a ``Vocabulary`` of ``TASK_UTILS``.\"\"\"

    def __init__(self, vocabulary: Union[Dict, Vocabulary]):
        super().__init__()
        if isinstance(vocabulary, dict):
            vocabulary = TASK_UTILS.build(vocabulary)
        elif not isinstance(vocabulary, Vocabulary):
            raise TypeError(f"vocabulary: got {type(vocabulary)}")
        self.proj = nn.Linear(8, vocabulary.size)

    def forward(self, x):
        return self.proj(x)


class Recognizer(nn.Module):
    \"\"\"Defaulted to ``None`` and asserted: the repair gives the registry dict.\"\"\"

    def __init__(self, decoder: OptConfigType = None):
        super().__init__()
        assert decoder is not None
        self.decoder = MODELS.build(decoder)

    def forward(self, x):
        return self.decoder(x)


def build_activation(cfg):
    return MODELS.build(cfg)


class ConvAct(nn.Module):
    def __init__(self, channels, act_cfg):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)
        self.act = build_activation(act_cfg)

    def forward(self, x):
        return self.act(self.conv(x))


class Grapher(nn.Module):
    def __init__(self, channels=8, act_cfg=dict(type="GELU")):
        super().__init__()
        self.body = ConvAct(channels, act_cfg)

    def forward(self, x):
        return self.body(x)


class EdgeBlock(nn.Module):
    \"\"\"Built one hand-over deeper, with the type the file gives ``act_cfg`` by default.\"\"\"

    def __init__(self, channels, act_cfg):
        super().__init__()
        self.body = ConvAct(channels, act_cfg)

    def forward(self, x):
        return self.body(x)


HEADS = Registry("head")


@HEADS.register_module()
class LinearDecoder(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.proj = nn.Linear(channels, channels)

    def forward(self, x):
        return self.proj(x)


@HEADS.register_module()
class CascadeDecodeHead(nn.Module):
    \"\"\"Itself the best of the kind ``decode_head`` asks, but not a candidate (it would
    build itself again): the decoder.\"\"\"

    def __init__(self, decode_head: ConfigType):
        super().__init__()
        self.decode_head = HEADS.build(decode_head)

    def forward(self, x):
        return self.decode_head(x)


class WrapPreprocessor(DataPreprocessor):
    \"\"\"Wraps a preprocessor: its own base is the class of that kind.\"\"\"

    def __init__(self, data_preprocessor: ConfigType):
        super().__init__()
        self.inner = MODELS.build(data_preprocessor)

    def forward(self, x):
        return self.inner(x)


class Resize(nn.Module):
    \"\"\"A bare ``tuple``: two sizes (not a config object).\"\"\"

    def __init__(self, scale: tuple):
        super().__init__()
        self.low, self.high = min(scale), max(scale)

    def forward(self, x):
        return x * self.low


class Options(nn.Module):
    \"\"\"A bare ``dict`` no registry builds: an empty one (not a config object).\"\"\"

    def __init__(self, options: dict):
        super().__init__()
        self.factor = options.get("factor", 2)

    def forward(self, x):
        return x * self.factor
"""
)

EXPECTED = {
    "Detector": ("head", "ConvHead"),
    "Decoder": ("vocabulary", "Vocabulary"),
    "Recognizer": ("decoder", "ConvDecoder"),
    "EdgeBlock": ("act_cfg", "GELU"),
    "CascadeDecodeHead": ("decode_head", "LinearDecoder"),
    "WrapPreprocessor": ("data_preprocessor", "DataPreprocessor"),
}


@pytest.mark.parametrize(
    ("name", "parameter", "value"), [("Resize", "scale", (2, 2)), ("Options", "options", {})]
)
def test_bare_container_annotations_get_plain_values(
    sandbox: Sandbox, tmp_path: Path, name: str, parameter: str, value: object
) -> None:
    result = probe(sandbox, tmp_path, BLOCKS, name)
    assert result.passed, result.message
    assert result.recipe is not None
    assert decode(result.recipe.init_kwargs[parameter]) == value


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_registry_dict_names_a_class_of_the_parameters_kind(
    sandbox: Sandbox, tmp_path: Path, name: str
) -> None:
    result = probe(sandbox, tmp_path, BLOCKS, name)
    assert result.passed, result.message
    recipe = result.recipe
    assert recipe is not None
    assert recipe.lossless, recipe.lossy
    parameter, kind = EXPECTED[name]
    given = decode(recipe.init_kwargs[parameter])
    assert isinstance(given, dict)
    assert given["type"] == kind
    replayed = probe(sandbox, tmp_path, BLOCKS, name, replay=recipe_to_dict(recipe))
    assert differences(result, replayed) == ()
