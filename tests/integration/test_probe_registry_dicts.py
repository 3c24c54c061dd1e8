"""A constructor parameter handed to a registry ``build`` call gets a registry config dict
(``dict(type=...)`` of a class the block file registers), whatever dict-like annotation it has."""

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


SCOPED_BLOCKS = """
from torch import nn


class Registry:
    \"\"\"Registries in a tree of scopes: a plain type string resolves in the registry and its
    ancestors, ``scope.Type`` in the registry of that scope anywhere in the tree.\"\"\"

    def __init__(self, name, scope, parent=None):
        self.name, self.scope, self.parent = name, scope, parent
        self._module_dict, self.children = {}, {}
        if parent is not None:
            parent.children[scope] = self

    def register_module(self):
        def register(cls):
            self._module_dict[cls.__name__] = cls
            return cls
        return register

    def get(self, key):
        scope, _, name = key.rpartition(".")
        if scope and scope != self.scope:
            root = self
            while root.parent is not None:
                root = root.parent
            return root.children[scope].get(name) if scope in root.children else None
        node = self
        while node is not None and name not in node._module_dict:
            node = node.parent
        return None if node is None else node._module_dict[name]

    def build(self, cfg):
        cfg = dict(cfg)
        cls = self.get(cfg.pop("type"))
        if cls is None:
            raise KeyError(f"not in the {self.scope}::{self.name} registry")
        return cls(**cfg)


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
