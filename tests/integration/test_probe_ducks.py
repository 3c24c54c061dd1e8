"""Parameters the constructor uses by their attributes get a class or a module that has them,
each rule on a small hand-made module."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnrag.model import ValidationResult
from nnrag.validate.sandbox import Sandbox
from tests import probing

pytestmark = pytest.mark.integration

HEAD = "from typing import Callable, Type\n\nimport torch\nfrom torch import nn\n\n"
STAND_IN = {"__ref__": "nnrag.validate.probe.stand_ins:ShapeKeeping"}
STAND_IN_CLASS = {"__ref__": "nnrag.validate.probe.ducks:attribute_class"}


def probe(sandbox: Sandbox, tmp_path: Path, code: str, name: str = "Block") -> ValidationResult:
    return probing.probe(sandbox, tmp_path, code, name, head=HEAD)


kwargs = probing.passed_kwargs


def test_a_called_parameter_gets_the_file_class_with_the_methods_it_reads(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Plain(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.lin = nn.Linear(width, width)

        def forward(self, x):
            return self.lin(x)


    class Wide(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.lin = nn.Linear(width, width * 2)

        @classmethod
        def out_width(cls, width):
            return width * 2

        def forward(self, x):
            return self.lin(x)


    class Block(nn.Module):
        def __init__(self, width: int, kind):
            super().__init__()
            self.part = kind(width)
            self.out = nn.Linear(kind.out_width(width), width)

        def forward(self, x):
            return self.out(self.part(x))
    """
    assert kwargs(probe(sandbox, tmp_path, code))["kind"] == {"__ref__": "nnrag_block:Wide"}


def test_a_called_parameter_no_file_class_has_gets_a_shape_keeping_class_with_them(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, width: int, blocks):
            super().__init__()
            self.part = blocks(width, width)
            self.out = nn.Linear(width * blocks.expansion, width)

        def forward(self, x):
            return self.out(self.part(x))
    """
    made = kwargs(probe(sandbox, tmp_path, code))["blocks"]
    assert made["__call__"] == STAND_IN_CLASS
    assert made["args"] == ["Blocks", {"__dict__": {"expansion": 1}}]  # the layer keeps widths


def test_a_class_checked_parameter_gets_what_hasattr_looks_for(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Known:
        pass


    def expansion_of(block):
        if hasattr(block, "expansion"):
            return block.expansion
        if issubclass(block, Known):
            return 1
        raise TypeError(f"no expansion for {block.__name__}")


    class Block(nn.Module):
        def __init__(self, width: int, block_type: Type[nn.Module]):
            super().__init__()
            self.part = block_type(width, width)
            self.out = nn.Linear(width * expansion_of(block_type), width)

        def forward(self, x):
            return self.out(self.part(x))
    """
    made = kwargs(probe(sandbox, tmp_path, code))["block_type"]
    assert made["__call__"] == STAND_IN_CLASS
    assert made["args"][1] == {"__dict__": {"expansion": 1}}


def test_a_module_parameter_gets_the_file_module_whose_base_sets_the_attribute(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Unrelated(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x)


    class Features(nn.Module):  # a base that cannot run
        def __init__(self, width: int):
            super().__init__()
            self.channel_list = [width, width]

        def forward(self, x):
            raise NotImplementedError


    class SmallFeatures(Features):
        def __init__(self, width: int):
            super().__init__(width)
            self.lin = nn.Linear(width, width)

        def forward(self, x):
            return self.lin(x)


    class Block(nn.Module):
        def __init__(self, trunk: nn.Module):
            super().__init__()
            self.trunk = trunk
            self.out = nn.Linear(trunk.channel_list[-1], 4)

        def forward(self, x):
            return self.out(self.trunk(x))
    """
    trunk = kwargs(probe(sandbox, tmp_path, code))["trunk"]
    assert trunk["__call__"] == {"__ref__": "nnrag_block:SmallFeatures"}


def test_a_module_parameter_no_file_module_has_gets_a_stand_in_with_them(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, trunk: nn.Module, memory):
            super().__init__()
            self.trunk = trunk
            self.memory = memory
            self.out = nn.Linear(trunk.channel_list[-1], memory.d_model)

        def forward(self, x):
            return self.out(self.memory(self.trunk(x)))
    """
    found = kwargs(probe(sandbox, tmp_path, code))
    assert found["trunk"]["__call__"] == STAND_IN
    assert set(found["trunk"]["__set__"]) == {"channel_list"}
    assert found["memory"]["__call__"] == STAND_IN
    assert set(found["memory"]["__set__"]) == {"d_model"}


def test_a_stand_in_has_what_is_read_through_the_attribute_holding_it(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, m: nn.Module):
            super().__init__()
            self.m = m
            nn.init.zeros_(self.m.w3.weight)  # a layer: a torch.nn one that declares both
            nn.init.zeros_(self.m.w3.bias)
            self.widths = self.m.channel_list[-1]  # a list

        def forward(self, x):
            self.m.set_size(x.shape[-1])  # called later, by forward: not given as data
            return x + self.m(x)
    """
    result = probe(sandbox, tmp_path, code)
    assert result.failed_stage == "forward"  # no ``set_size``: built, not run
    assert result.recipe is not None
    made = result.recipe.init_kwargs["m"]
    assert made["__call__"] == STAND_IN
    assert set(made["__set__"]) == {"w3", "channel_list"}
    assert made["__set__"]["w3"]["__call__"] == {"__ref__": "torch.nn.modules.linear:Linear"}
    assert isinstance(made["__set__"]["channel_list"], list)


def test_a_module_parameter_no_file_module_has_gets_the_torch_layer_declaring_them(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, embed_tokens):
            super().__init__()
            self.embed_tokens = embed_tokens
            self.pad = embed_tokens.padding_idx
            self.out = nn.Linear(embed_tokens.embedding_dim, 4)

        def forward(self, ids):
            return self.out(self.embed_tokens(ids))
    """
    found = kwargs(probe(sandbox, tmp_path, code))["embed_tokens"]
    assert found["__call__"] == {"__ref__": "torch.nn.modules.sparse:Embedding"}


def test_a_callable_parameter_whose_attributes_are_read_gets_a_module_having_them(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Message(nn.Module):
        def __init__(self, width: int):
            super().__init__()
            self.out_channels = width
            self.lin = nn.Linear(width, width)

        def forward(self, x):
            return self.lin(x)


    class Block(nn.Module):
        def __init__(self, message: Callable):
            super().__init__()
            self.message = message
            self.out = nn.Linear(message.out_channels, 4)

        def forward(self, x):
            return self.out(self.message(x))
    """
    found = kwargs(probe(sandbox, tmp_path, code))["message"]
    assert found["__call__"] == {"__ref__": "nnrag_block:Message"}


def test_a_parameter_whose_method_no_file_class_has_gets_no_stand_in(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Block(nn.Module):
        def __init__(self, base: nn.Module):
            super().__init__()
            self.base = base
            self.fc = self.base.get_classifier()

        def forward(self, x):
            return self.fc(self.base(x))
    """
    result = probe(sandbox, tmp_path, code)
    assert not result.passed
    assert result.failed_stage == "instantiate"
    assert "get_classifier" in result.message


def test_a_parameter_told_apart_by_isinstance_gets_no_stand_in(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """``isinstance(module, nn.Linear)`` before ``module.in_features``: a stand-in carrying the
    attributes would fail the test, so the module comes from the usual candidates."""
    code = """
    class Block(nn.Module):
        def __init__(self, module: nn.Module):
            super().__init__()
            if isinstance(module, nn.Linear):
                width = module.in_features
            elif isinstance(module, nn.Conv2d):
                width = module.in_channels
            else:
                raise ValueError(f"Expected a linear or convolution module (got {type(module)})")
            self.out = nn.Linear(width, 4)

        def forward(self, x):
            return self.out(x)
    """
    made = kwargs(probe(sandbox, tmp_path, code))["module"]
    assert made["__call__"] != STAND_IN


class _Maker:
    """Builds a layer with the first of a few plain argument lists that works."""

    def __init__(self) -> None:
        self.placeholders: list[str] = []

    def build(self, cls: type) -> object:
        for args in ((), (3,), (3, 3), (3, 3, 1)):
            try:
                return cls(*args)
            except Exception:
                continue
        return None

    def field(self, name: str) -> object:
        return 1

    def structure(self, name: str, tree: object) -> object:
        return 1


def test_a_torch_layer_is_indexable_where_the_code_indexes_it() -> None:
    """``layer.kernel_size[0]``: the smallest layer declaring ``kernel_size`` and
    ``dilation`` (``nn.Unfold``) holds ints there; a layer with pairs is taken instead."""
    from nnrag.validate.probe.ducks import torch_layer

    reads = {"kernel_size", "dilation"}
    plain = torch_layer(_Maker(), reads)
    assert isinstance(plain.kernel_size, int)  # type: ignore[attr-defined]  # a module built for the test
    tree = {("attr", "kernel_size"): {("item", ""): {}}}
    indexed = torch_layer(_Maker(), reads, tree)
    assert indexed.kernel_size[0] == 1  # type: ignore[attr-defined]  # a module built for the test


def test_a_module_parameter_is_never_an_instance_of_the_block_itself(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Residual(nn.Module):
        def __init__(self, m: nn.Module):
            super().__init__()
            self.m = m

        def forward(self, x):
            return x + self.m(x)

        def fuse(self):  # only the block itself has ``fuse``: it is no value for ``m``
            return self.m.fuse() if isinstance(self.m, Residual) else self
    """
    m = kwargs(probe(sandbox, tmp_path, code, "Residual"))["m"]
    assert m["__call__"] != {"__ref__": "nnrag_block:Residual"}


def test_a_stand_in_class_scaled_by_its_ratio_maps_its_first_width_to_its_second(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    code = """
    class Net(nn.Module):
        def __init__(self, block: Type[nn.Module], width: int):
            super().__init__()
            self.stem = nn.Conv2d(3, width, 1)
            # stages double the width: layers that kept 32 channels would meet a 128-wide head
            self.stage1 = block(width, 2 * width)
            self.stage2 = block(2 * width * block.expansion, 4 * width)
            self.head = nn.Linear(4 * width * block.expansion, 10)

        def forward(self, x):
            x = self.stage2(self.stage1(self.stem(x)))
            return self.head(x.mean((2, 3)))
    """
    made = kwargs(probe(sandbox, tmp_path, code, "Net"))["block"]
    assert made["__call__"] == STAND_IN_CLASS
    assert made["kwargs"] == {"widening": True}
