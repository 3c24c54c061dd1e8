"""Config values the block can use: a class with nothing to configure (a stand-in the block
only tests against) is never a value; a parameter the constructor uses as a mapping gets a
mapping (the arguments of the class it is spread into, the default of the parameter it is
handed to), each rule on a small hand-made module."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from nnrag.recipes import recipe_to_dict
from nnrag.validate.replay import differences
from nnrag.validate.sandbox import Sandbox
from tests.probing import probe

pytestmark = pytest.mark.integration

STAND_INS = """
from typing import Optional, Union


class ConfigDict:
    \"\"\"Stand-in for a config dict class: the block only tests against it.\"\"\"


class Config:
    \"\"\"Stand-in for a config class: the block only tests against it.\"\"\"


ConfigType = Union[ConfigDict, dict]
OptConfigType = Optional[ConfigType]


def is_config(cfg):
    return isinstance(cfg, (ConfigDict, Config))


class Part(nn.Module):
    def __init__(self, width: int, scale: float = 1.0):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.scale = scale

    def forward(self, x):
        return self.lin(x) * self.scale
"""


def passed_kwargs(sandbox: Sandbox, tmp_path: Path, code: str, name: str) -> dict[str, Any]:
    """The recorded constructor keyword arguments of a block that passed, after checking
    that the recipe is lossless and replays to the same result."""
    code = STAND_INS + textwrap.dedent(code)
    result = probe(sandbox, tmp_path, code, name)
    assert result.passed, result.message
    recipe = result.recipe
    assert recipe is not None
    assert recipe.lossless, recipe.lossy
    replayed = probe(sandbox, tmp_path, code, name, replay=recipe_to_dict(recipe))
    assert differences(result, replayed) == ()
    return dict(recipe.init_kwargs)


def test_a_config_spread_into_a_class_gets_its_arguments(sandbox: Sandbox, tmp_path: Path) -> None:
    """``Part(**layer_cfg)`` with ``layer_cfg: Union[ConfigDict, dict]`` and an empty
    ``ConfigDict``: a dict (not the stand-in) holding ``Part``'s required ``width``."""
    code = """
    class Spreads(nn.Module):
        def __init__(self, layer_cfg: ConfigType):
            super().__init__()
            self.part = Part(**layer_cfg)

        def forward(self, x):
            return self.part(x)
    """
    value = passed_kwargs(sandbox, tmp_path, code, "Spreads")["layer_cfg"]
    assert set(value) == {"__dict__"}
    assert set(value["__dict__"]) == {"width"}


def test_a_config_named_parameter_is_no_stand_in_instance(sandbox: Sandbox, tmp_path: Path) -> None:
    """An unannotated ``act_cfg`` read with ``.get``: a dict, not ``Config()`` (the file's
    only class named like a config, an empty stand-in) nor a placeholder config."""
    code = """
    class Reads(nn.Module):
        def __init__(self, width, act_cfg):
            super().__init__()
            self.lin = nn.Linear(width, width)
            self.slope = act_cfg.get("slope", 0.1)

        def forward(self, x):
            return nn.functional.leaky_relu(self.lin(x), self.slope)
    """
    assert passed_kwargs(sandbox, tmp_path, code, "Reads")["act_cfg"] == {"__dict__": {}}


def test_a_config_handed_to_a_parameter_with_a_mapping_default_gets_that_default(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``Act(act_cfg=act_cfg)`` where ``Act`` defaults ``act_cfg=dict(kind='relu')`` and
    reads ``act_cfg["kind"]``: that default, not an empty dict nor a namespace."""
    code = """
    class Act(nn.Module):
        def __init__(self, act_cfg=dict(kind="relu")):
            super().__init__()
            cfg = act_cfg.copy()
            self.act = nn.ReLU() if cfg["kind"] == "relu" else nn.Tanh()

        def forward(self, x):
            return self.act(x)


    class HandsOn(nn.Module):
        def __init__(self, width, act_cfg):
            super().__init__()
            self.lin = nn.Linear(width, width)
            self.act = Act(act_cfg=act_cfg)

        def forward(self, x):
            return self.act(self.lin(x))
    """
    value = passed_kwargs(sandbox, tmp_path, code, "HandsOn")["act_cfg"]
    assert value == {"__dict__": {"kind": "relu"}}


def test_a_none_default_spread_into_a_class_is_given_a_mapping(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``encoder=None`` spread (``Part(**encoder)``) fails on ``None``: the repair gives it a
    dict of ``Part``'s arguments."""
    code = """
    class Defaulted(nn.Module):
        def __init__(self, encoder: OptConfigType = None, gain: float = 1.0):
            super().__init__()
            self.encoder = Part(**encoder)
            self.gain = gain

        def forward(self, x):
            return self.encoder(x) * self.gain
    """
    value = passed_kwargs(sandbox, tmp_path, code, "Defaulted")["encoder"]
    assert set(value["__dict__"]) == {"width"}


def test_a_config_taken_through_kwargs_gets_its_base_annotation(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``Sub(*args, **kwargs)`` hands ``layer_cfg`` to ``Base(layer_cfg: ConfigType)``, which
    spreads it in a method ``Sub`` overrides: a dict of the spread class's arguments, not an
    instance of the stand-in ``Config`` chosen by the parameter's name."""
    code = """
    class Base(nn.Module):
        def __init__(self, depth: int, layer_cfg: ConfigType):
            super().__init__()
            self.depth = depth
            self.layer_cfg = layer_cfg
            self.build()

        def build(self):
            self.layers = nn.ModuleList(Part(**self.layer_cfg) for _ in range(self.depth))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x


    class Sub(Base):
        def __init__(self, *args, gate: bool = False, **kwargs):
            self.gate = gate
            super().__init__(*args, **kwargs)

        def build(self):
            self.layers = nn.ModuleList(Part(**self.layer_cfg, scale=0.5) for _ in range(1))
    """
    value = passed_kwargs(sandbox, tmp_path, code, "Sub")["layer_cfg"]
    assert set(value["__dict__"]) == {"width"}


def test_a_config_used_only_by_an_isinstance_test_keeps_its_namespace(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``isinstance(config, dict)`` alone (code that takes other values too) does not make a
    config whose attributes are read a dict."""
    code = """
    class Tested(nn.Module):
        def __init__(self, config):
            super().__init__()
            if isinstance(config, dict):
                config = Config()
            self.lin = nn.Linear(config.hidden_size, config.hidden_size)

        def forward(self, x):
            return self.lin(x)
    """
    value = passed_kwargs(sandbox, tmp_path, code, "Tested")["config"]
    assert value["__call__"] == {"__ref__": "types:SimpleNamespace"}


def test_a_config_dict_class_read_by_attribute_gets_those_keys(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A config dict class that serves its keys as attributes, read as ``cfg.width``: built
    with a ``width`` key (an empty one fails on the read)."""
    code = """
    class AttrDict(dict):
        def __getattr__(self, name):
            try:
                return self[name]
            except KeyError:
                raise AttributeError(name) from None


    class ByAttribute(nn.Module):
        def __init__(self, cfg: Union[AttrDict, dict]):
            super().__init__()
            self.lin = nn.Linear(cfg.width, cfg.width)

        def forward(self, x):
            return self.lin(x)
    """
    value = passed_kwargs(sandbox, tmp_path, code, "ByAttribute")["cfg"]
    assert value["__call__"] == {"__ref__": "nnrag_block:AttrDict"}
    assert set(value["kwargs"]) == {"width"}


def test_a_none_default_of_a_base_taken_through_kwargs_is_given_a_mapping(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``Sub(*args, **kwargs)`` hands everything to a base whose ``encoder=None`` is spread
    (``Part(**encoder)``): the repair finds ``encoder`` in the base's constructor."""
    code = """
    class Base(nn.Module):
        def __init__(self, encoder: OptConfigType = None, gain: float = 1.0):
            super().__init__()
            self.encoder = Part(**encoder)
            self.gain = gain

        def forward(self, x):
            return self.encoder(x) * self.gain


    class Sub(Base):
        def __init__(self, *args, extra: int = 1, **kwargs):
            super().__init__(*args, **kwargs)
            self.extra = extra
    """
    value = passed_kwargs(sandbox, tmp_path, code, "Sub")["encoder"]
    assert set(value["__dict__"]) == {"width"}


def test_a_union_of_a_scalar_and_a_mapping_keeps_the_scalar(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``in_channels: Union[int, Dict[str, int]]`` read as a mapping only after an
    ``isinstance`` test: the code takes both, so the width the prober chose stays."""
    code = """
    from typing import Dict


    class Block(nn.Module):
        def __init__(self, in_channels: Union[int, Dict[str, int]], out_channels: int):
            super().__init__()
            if isinstance(in_channels, dict):
                self.types = list(in_channels.keys())
                in_channels = max(in_channels.values())
            self.lin = nn.Linear(in_channels, out_channels)

        def forward(self, x):
            return self.lin(x)
    """
    value = passed_kwargs(sandbox, tmp_path, code, "Block")["in_channels"]
    assert isinstance(value, int)
