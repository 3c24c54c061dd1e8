"""A constructor parameter handed to a registry ``build`` call gets a registry config dict
(``dict(type=...)`` of a class the block file registers), whatever dict-like annotation it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.recipes import recipe_to_dict
from nnrag.validate.probe.values import decode
from nnrag.validate.replay import differences
from nnrag.validate.sandbox import Sandbox
from tests.probing import SCOPED_REGISTRY, TOY_REGISTRY, probe

pytestmark = pytest.mark.integration

BLOCKS = (
    """
from typing import Optional, Union

import torch
from torch import nn


"""
    + TOY_REGISTRY
    + """

MODELS = Registry("model")


class ConfigDict(dict):
    \"\"\"A config dict class with defaults of its own (not a config object).\"\"\"

    def __init__(self, *args, scope="default", **kwargs):
        super().__init__(*args, scope=scope, **kwargs)


ConfigType = Union[ConfigDict, dict]
OptConfigType = Optional[ConfigType]


@MODELS.register_module()
class TinyNeck(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return self.conv(x)


class Detector(nn.Module):
    def __init__(self, neck: ConfigType):
        super().__init__()
        self.neck = MODELS.build(neck)

    def forward(self, x):
        return self.neck(x)


class Segmentor(nn.Module):
    def __init__(self, backbone: ConfigType, neck: ConfigType):
        super().__init__()
        self.backbone = MODELS.build(backbone)
        self.neck = MODELS.build(neck)

    def forward(self, x):
        return self.neck(self.backbone(x))


class PlainDictDetector(nn.Module):
    def __init__(self, neck: dict, head: OptConfigType = None):
        super().__init__()
        self.neck = MODELS.build(neck)

    def forward(self, x):
        return self.neck(x)
"""
)


@pytest.mark.parametrize("name", ["Detector", "PlainDictDetector"])
def test_parameter_built_by_a_registry_gets_a_type_dict(
    sandbox: Sandbox, tmp_path: Path, name: str
) -> None:
    result = probe(sandbox, tmp_path, BLOCKS, name)
    assert result.passed, result.message
    recipe = result.recipe
    assert recipe is not None
    assert recipe.lossless, recipe.lossy
    assert decode(recipe.init_kwargs["neck"]) == {"type": "TinyNeck"}
    replayed = probe(sandbox, tmp_path, BLOCKS, name, replay=recipe_to_dict(recipe))
    assert differences(result, replayed) == ()


def test_a_registered_class_of_another_kind_is_a_placeholder(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The file registers no backbone: the neck it registers (the kind of the ``neck``
    parameter beside it) runs as the backbone only as a stand-in, so forward on it is not
    the block's pass."""
    result = probe(sandbox, tmp_path, BLOCKS, "Segmentor")
    assert not result.passed
    assert (result.failed_stage, result.category) == ("forward", "ctor-args")
    assert "placeholders for backbone" in result.message


SCOPED_BLOCKS = (
    """
from torch import nn


"""
    + SCOPED_REGISTRY
    + """

BASE_MODELS = Registry("model", "base")
UP_MODELS = Registry("model", "up", parent=BASE_MODELS)
DOWN_MODELS = Registry("model", "down", parent=BASE_MODELS)


@UP_MODELS.register_module()
class UpNeck(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return self.conv(x)


@DOWN_MODELS.register_module()
class DownDetector(nn.Module):
    def __init__(self, neck: dict):
        super().__init__()
        self.neck = DOWN_MODELS.build(neck)

    def forward(self, x):
        return self.neck(x)
"""
)


def test_a_class_of_a_sibling_scope_is_named_with_its_scope(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The block builds from the ``down`` registry; the only neck is registered in its
    sibling ``up``, and a plain ``UpNeck`` does not resolve from ``down``: the config dict
    names it ``up.UpNeck``."""
    result = probe(sandbox, tmp_path, SCOPED_BLOCKS, "DownDetector")
    assert result.passed, result.message
    assert result.recipe is not None
    assert decode(result.recipe.init_kwargs["neck"]) == {"type": "up.UpNeck"}


DEFAULT_SCOPE_BLOCKS = (
    """
from torch import nn


"""
    + SCOPED_REGISTRY
    + """

MODELS = Registry("model", "engine")
ACTION_MODELS = Registry("model", "action", parent=MODELS)


@ACTION_MODELS.register_module()
class ActionPreprocessor(nn.Module):
    def forward(self, x):
        return x * 2


OTHER_MODELS = Registry("model", "other", parent=MODELS)


@OTHER_MODELS.register_module()
class OtherPreprocessor(nn.Module):
    def forward(self, x):
        return x - 1


class Reidentifier(nn.Module):  # a base class of another package, built by its registry
    def __init__(self, preprocessor: dict = dict(type="OtherPreprocessor")):
        super().__init__()
        self.preprocessor = OTHER_MODELS.build(preprocessor)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(self.preprocessor(x))


class Recognizer(nn.Module):
    def __init__(self, preprocessor: dict = dict(type="ActionPreprocessor")):
        super().__init__()
        self.preprocessor = MODELS.build(preprocessor)  # the root registry, as a base class does
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(self.preprocessor(x))
"""
)


def test_builds_start_from_the_scope_of_the_blocks_own_package(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The block builds its default from the root registry, as mmengine's ``BaseModel``
    builds ``data_preprocessor``; the class is registered in the child of the block's package
    (``action``), which a runner makes the default scope. The probe enters it too, once a
    build misses a type string: a block that builds as a plain script (from a registry of
    another package, which the package's scope would not reach) builds so."""
    code = DEFAULT_SCOPE_BLOCKS
    result = probe(sandbox, tmp_path, code, "Recognizer", module="action.models.recognizer")
    assert result.passed, result.message
    elsewhere = probe(  # a block of another package builds as a plain script
        sandbox, tmp_path, code, "Recognizer", module="other.models"
    )
    assert (elsewhere.failed_stage, elsewhere.category) == ("instantiate", "dynamic-registry")
    other = probe(  # builds as a plain script: the scope is entered only on a miss
        sandbox, tmp_path, code, "Reidentifier", module="action.models.reid"
    )
    assert other.passed, other.message


EMPTY_REGISTRY_BLOCKS = (
    """
from torch import nn


"""
    + TOY_REGISTRY
    + """

MODELS = Registry("model")
TOKENIZER = Registry("tokenizer")  # filled at run time by code the file does not carry


@MODELS.register_module()
class TinyNeck(nn.Module):
    def forward(self, x):
        return x


class Tagger(nn.Module):  # it can do without a tokenizer: its failure is its own
    def __init__(self, width: int, tokenizer: dict = None):
        super().__init__()
        self.tokenizer = None if tokenizer is None else TOKENIZER.build(tokenizer)
        raise ValueError("this tagger is never built")

    def forward(self, x):
        return x


class Captioner(nn.Module):
    def __init__(self, tokenizer: dict):
        super().__init__()
        self.tokenizer = TOKENIZER.build(tokenizer)

    def forward(self, x):
        return x
"""
)


def test_a_build_from_an_empty_registry_gets_no_class_of_another(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The ``tokenizer`` registry holds nothing in the file: the config dict does not name
    the ``model`` registry's neck, so the failure is not about a key the probe chose."""
    result = probe(sandbox, tmp_path, EMPTY_REGISTRY_BLOCKS, "Captioner")
    assert not result.passed
    assert (result.failed_stage, result.category) == ("instantiate", "dynamic-registry")
    assert "TinyNeck" not in (result.message or "")
    assert "TinyNeck" not in repr(result.recipe)
    assert "no class to build tokenizer (the 'tokenizer' registry)" in (result.message or "")
    optional = probe(sandbox, tmp_path, EMPTY_REGISTRY_BLOCKS, "Tagger")
    assert (optional.failed_stage, optional.category) == ("instantiate", "ctor-args")
    assert "no class to build" not in (optional.message or "")


VOCABULARY_BLOCKS = (
    """
from torch import nn


"""
    + TOY_REGISTRY
    + """

TASK_UTILS = Registry("task util")


@TASK_UTILS.register_module()
class Vocabulary:
    def __init__(self, dict_file: str, with_end: bool = False):
        with open(dict_file) as handle:
            self.chars = [line.strip() for line in handle if line.strip()]
        self.with_end = with_end


class Reader(nn.Module):
    def __init__(self, vocabulary: dict):
        super().__init__()
        self.vocabulary = TASK_UTILS.build(vocabulary)
        assert self.vocabulary.with_end, "the vocabulary must end sequences (with_end=True)"
        self.proj = nn.Linear(len(self.vocabulary.chars), 8)

    def forward(self, x):
        return self.proj(x)
"""
)


def test_a_character_list_file_is_written_and_an_asserted_setting_set_in_the_config(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``dict_file``: a file of characters, one per line, written in the child's folder and
    rebuilt by the replay; ``(with_end=True)`` in the assertion: set in the config dict."""
    result = probe(sandbox, tmp_path, VOCABULARY_BLOCKS, "Reader")
    assert result.passed, result.message
    assert result.recipe is not None
    vocabulary = result.recipe.init_kwargs["vocabulary"]["__dict__"]
    assert vocabulary["with_end"] is True
    assert vocabulary["dict_file"]["__call__"] == {
        "__ref__": "nnrag.validate.probe.values:text_file"
    }
    replayed = probe(
        sandbox, tmp_path, VOCABULARY_BLOCKS, "Reader", replay=recipe_to_dict(result.recipe)
    )
    assert differences(result, replayed) == ()
