"""Probing on hand-made modules: constructor arguments and inputs are found, and recorded."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.model import BlockHints, ValidationResult
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import run_validation

pytestmark = pytest.mark.integration

BLOCKS = '''
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, stride, padding=kernel_size // 2)
        self.bn = nn.BatchNorm2d(out_chs)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class Mlp(nn.Module):
    def __init__(self, in_features: int, hidden_features: Optional[int] = None, drop: float = 0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features or 4 * in_features)
        self.fc2 = nn.Linear(hidden_features or 4 * in_features, in_features)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        assert dim % num_heads == 0, "dim must be divisible by num_heads"
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)).softmax(-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, batch_first=True)

    def forward(self, src, src_mask):
        return self.layer(src, src_key_padding_mask=src_mask)


@dataclass
class ModelConfig:
    hidden_size: int = 768
    num_attention_heads: int = 12
    intermediate_size: int = 3072


class ConfigBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.hidden_size % config.num_attention_heads == 0
        self.attn = nn.MultiheadAttention(
            config.hidden_size, config.num_attention_heads, batch_first=True
        )
        self.ff = nn.Linear(config.hidden_size, config.intermediate_size)
        self.width = config.hidden_size

    def forward(self, hidden_states):
        out, _ = self.attn(hidden_states, hidden_states, hidden_states)
        return self.ff(out)


class Typed(nn.Module):
    def __init__(self, block: ConvBlock):
        super().__init__()
        self.block = block

    def forward(self, x):
        return self.block(x) + x


class Untyped(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return self.block(x)


class GraphConv(nn.Module):
    """A message-passing layer in the torch_geometric style."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index):
        src, dst = edge_index
        out = torch.zeros_like(x).index_add_(0, dst, x[src])
        return self.lin(out + x)


class PosAttn(nn.Module):
    """Relative positions need a concrete feature size and (B, H*W, C) tokens."""

    def __init__(self, dim: int, feat_size: Optional[int] = None):
        super().__init__()
        assert feat_size is not None, "A concrete feature size is required"
        self.side = feat_size
        self.pos = nn.Parameter(torch.zeros(feat_size * feat_size, dim))

    def forward(self, x):
        b, n, c = x.shape
        return x.reshape(b, self.side, self.side, c).flatten(1, 2) + self.pos


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1)
        self.conv2 = nn.Conv2d(planes, planes * self.expansion, 1)

    def forward(self, x):
        return self.conv2(self.conv1(x)) + x


class GroupNormBlock(nn.Module):
    def __init__(self, out_chs):
        super().__init__()
        self.conv = nn.Conv2d(out_chs, out_chs // 4, 1)
        self.norm = nn.GroupNorm(32, out_chs // 4)

    def forward(self, x):
        return self.norm(self.conv(x))


class Stages(nn.Module):
    def __init__(self, in_chans=3, widths=(), depths=()):
        super().__init__()
        self.stem = nn.Conv2d(in_chans, widths[0], 3, padding=1)
        self.last = nn.Conv2d(widths[0], widths[3], 1)

    def forward(self, x):
        return self.last(self.stem(x))


class EdgeLayer(nn.Module):
    """GINE style: an ``nn`` argument and edge features whose width follows ``edge_dim``."""

    def __init__(self, nn, edge_dim=None):
        super().__init__()
        self.nn = nn
        self.edge_dim = edge_dim

    def forward(self, x, edge_index, edge_attr=None):
        src, dst = edge_index
        message = x[src] + edge_attr.sum(-1, keepdim=True)
        return self.nn(torch.zeros_like(x).index_add_(0, dst, message) + x)


class Odd(nn.Module):
    def __init__(self, spec):
        super().__init__()
        rows, cols = (int(v) for v in spec.split("x"))
        self.lin = nn.Linear(rows, cols)

    def forward(self, x):
        return self.lin(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = ConvBlock(3, 8)
        self.odd = Odd("8x5")

    def forward(self, x):
        return self.odd(self.stem(x).mean((2, 3)))
'''


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probe") / "blocks.py"
    path.write_text(textwrap.dedent(BLOCKS))
    return path


def check(
    sandbox: Sandbox, blocks: Path, name: str, **kwargs: object
) -> tuple[ValidationResult, list[dict[str, object]]]:
    return run_validation(
        blocks,
        block_id=f"t:blocks:{name}",
        class_name=name,
        depth="backward",
        timeout_s=30.0,
        sandbox=sandbox,
        **kwargs,  # type: ignore[arg-type]  # **kwargs: object, passed through to run_validation
    )


@pytest.mark.parametrize(
    ("name", "rank"),
    [("ConvBlock", 4), ("Mlp", 3), ("Attention", 3), ("EncoderLayer", 3), ("ConfigBlock", 3)],
)
def test_block_is_probed_through_backward(
    sandbox: Sandbox, blocks: Path, name: str, rank: int
) -> None:
    result, _ = check(sandbox, blocks, name)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.origin == "synthesized"
    first = result.recipe.inputs[0]
    assert isinstance(first, dict)
    assert len(first["shape"]) == rank
    assert result.recipe.parameters
    assert result.recipe.parameters > 0
    assert result.recipe.output_shapes


def test_heads_divide_the_dimension(sandbox: Sandbox, blocks: Path) -> None:
    result, _ = check(sandbox, blocks, "Attention")
    assert result.recipe is not None
    kwargs = result.recipe.init_kwargs
    assert isinstance(kwargs["dim"], int)
    assert isinstance(kwargs["num_heads"], int)
    assert kwargs["num_heads"] > 1
    assert kwargs["dim"] % kwargs["num_heads"] == 0


def test_config_class_is_built_and_shrunk(sandbox: Sandbox, blocks: Path) -> None:
    result, _ = check(sandbox, blocks, "ConfigBlock")
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.parameters is not None
    assert result.recipe.parameters < 768 * 3072  # shrunk, not the default sizes


def test_typed_submodule_argument_is_built(sandbox: Sandbox, blocks: Path) -> None:
    result, _ = check(sandbox, blocks, "Typed")
    assert result.passed, result.message


def test_untyped_submodule_argument_gets_a_real_layer(sandbox: Sandbox, blocks: Path) -> None:
    # the placeholder (nn.Identity) forward ran with becomes a real layer of the shape it saw
    # (a placeholder that stays fails as ctor-args: test_probe_timm_rules.py)
    result, _ = check(sandbox, blocks, "Untyped")
    assert result.passed, result.message
    assert result.recipe is not None
    assert not result.recipe.placeholders
    block = result.recipe.init_kwargs["block"]
    assert isinstance(block, dict)
    assert block["__call__"]["__ref__"] in {
        "torch.nn.modules.conv:Conv2d",
        "torch.nn.modules.linear:Linear",
    }


def test_graph_layer_gets_nodes_and_edge_index(sandbox: Sandbox, blocks: Path) -> None:
    result, _ = check(sandbox, blocks, "GraphConv")
    assert result.passed, result.message
    assert result.recipe is not None
    x, edges = result.recipe.inputs
    assert isinstance(x, dict)
    assert isinstance(edges, dict)
    assert len(x["shape"]) == 2
    assert edges["shape"][0] == 2
    assert edges["dtype"] == "int64"


@pytest.mark.parametrize("name", ["PosAttn", "Bottleneck", "GroupNormBlock", "Stages"])
def test_constructor_and_input_repairs(sandbox: Sandbox, blocks: Path, name: str) -> None:
    result, _ = check(sandbox, blocks, name)
    assert result.passed, result.message
    assert result.recipe is not None
    kwargs = result.recipe.init_kwargs
    if name == "PosAttn":  # concrete feat_size and tokens of (B, side * side, C)
        side = kwargs["feat_size"]
        assert isinstance(side, int)
        first = result.recipe.inputs[0]
        assert isinstance(first, dict)
        assert first["shape"][1] == side * side
    if name == "Bottleneck":  # input width widened to the expanded output width
        assert kwargs["inplanes"] == 4 * kwargs["planes"]  # type: ignore[operator]  # recipe values are object-typed JSON; these are ints


def test_graph_layer_gets_edge_attr_and_a_real_nn(sandbox: Sandbox, blocks: Path) -> None:
    result, _ = check(sandbox, blocks, "EdgeLayer")
    assert result.passed, result.message
    assert result.recipe is not None
    assert "edge_attr" in result.recipe.input_kwargs  # passed: so no placeholder for nn


def test_hints_win(sandbox: Sandbox, blocks: Path) -> None:
    hints = BlockHints(
        pattern="Mlp",
        init_kwargs={"in_features": 6, "hidden_features": 7},
        inputs=({"shape": [3, 6], "dtype": "float32"},),
    )
    result, _ = check(sandbox, blocks, "Mlp", hints=hints)
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.origin == "hinted"
    assert result.recipe.output_shapes == ([3, 6],)


def test_wrong_hints_fail_without_fallback(sandbox: Sandbox, blocks: Path) -> None:
    hints = BlockHints(pattern="Mlp", init_kwargs={"wrong": 1})
    result, _ = check(sandbox, blocks, "Mlp", hints=hints)
    assert (result.failed_stage, result.category) == ("instantiate", "ctor-args")


def test_composite_block_harvests_and_replays(sandbox: Sandbox, blocks: Path) -> None:
    alone, _ = check(sandbox, blocks, "Odd")
    assert alone.failed_stage == "instantiate"
    net, records = check(sandbox, blocks, "Net")
    assert net.passed, net.message
    odd = [r for r in records if r["class"] == "Odd"]
    assert odd
    assert odd[0]["init_args"] == ["8x5"]
    replayed, _ = check(sandbox, blocks, "Odd", harvested=odd)
    assert replayed.passed, replayed.message
    assert replayed.recipe is not None
    assert replayed.recipe.origin == "harvested"


def test_import_errors_are_missing_externals_at_every_stage() -> None:
    from nnrag.validate.probe.outcomes import classify

    lazy = ImportError("'radius_graph' requires 'pyg-lib>=0.6.0'")
    assert classify(lazy, "forward", []) == "missing-external"
    assert classify(lazy, "instantiate", []) == "missing-external"
    absent = ModuleNotFoundError("No module named 'timm'", name="timm")
    assert classify(absent, "instantiate", []) == "missing-external"
    assert classify(absent, "forward", [], frozenset({"timm"})) == "source-import"
    assert classify(ValueError("bad size"), "instantiate", []) == "ctor-args"
    advice = RuntimeError("Please `pip install transformers` to use pre-trained models")
    assert classify(advice, "instantiate", []) == "missing-external"
    assert classify(RuntimeError("Please install Fairseq"), "forward", []) == "missing-external"
    assert classify(RuntimeError("install the weights first"), "instantiate", []) == "ctor-args"


def test_an_unbound_local_named_like_an_absent_package_is_a_missing_external() -> None:
    """auraloss: ``try: import librosa.filters`` / ``except Exception as e: print(e)``, then
    ``librosa.filters.mel(...)``: the package is absent, the ``UnboundLocalError`` says so."""
    from nnrag.validate.probe.outcomes import classify, describe

    def build() -> object:
        try:
            import nnrag_absent_audio_library  # type: ignore[import-not-found]  # absent on purpose
        except ImportError as error:
            print(error)  # what auraloss does
        return nnrag_absent_audio_library.filters

    with pytest.raises(UnboundLocalError) as absent:
        build()
    assert classify(absent.value, "instantiate", []) == "missing-external"
    assert "'nnrag_absent_audio_library', which is not installed" in describe(absent.value)

    def scale(flag: bool) -> int:
        if flag:
            width = 2
        return width  # a local never assigned: the block's own bug

    with pytest.raises(UnboundLocalError) as local:
        scale(False)
    assert classify(local.value, "forward", []) == "runtime-error"


def test_registry_misses_are_dynamic_registry_at_every_stage() -> None:
    from nnrag.validate.probe.runner import classify

    mmengine = KeyError(
        "BN is not in the mmengine::model registry. Please check whether the value of `BN` "
        "is correct or it was registered as expected."
    )
    fvcore = KeyError("No object named 'ResNet' found in 'BACKBONE' registry!")
    for error in (mmengine, fvcore):
        assert classify(error, "instantiate", []) == "dynamic-registry"
        assert classify(error, "forward", []) == "dynamic-registry"
    assert classify(KeyError("weight"), "instantiate", []) == "ctor-args"
    assert classify(KeyError("weight"), "forward", []) == "runtime-error"


def test_an_absent_compiled_extension_is_a_native_op() -> None:
    from nnrag.validate.probe.runner import classify

    ext = ModuleNotFoundError("No module named 'mmcv._ext'", name="mmcv._ext")
    assert classify(ext, "import", [], frozenset({"mmcv"})) == "native-op"
    assert classify(ext, "forward", []) == "native-op"
    public = ModuleNotFoundError("No module named 'mmcv.ops'", name="mmcv.ops")
    assert classify(public, "import", [], frozenset({"mmcv"})) == "source-import"


def test_an_installed_module_lacking_an_attribute_is_a_missing_external() -> None:
    from nnrag.validate.probe.outcomes import classify, describe

    def lacking(module: str) -> AttributeError:
        try:
            _ = __import__(module).no_such_attribute
        except AttributeError as error:
            return error
        raise AssertionError(module)

    assert classify(lacking("json"), "forward", []) == "missing-external"
    assert classify(lacking("json"), "import", []) == "missing-external"
    assert "install the release the block was written for" in describe(lacking("json"))
    assert classify(lacking("json"), "forward", [], frozenset({"json"})) == "runtime-error"
    assert "install the release" not in describe(lacking("json"), frozenset({"json"}))
    made_here = AttributeError("module 'made_at_run_time' has no attribute 'x'")
    assert classify(made_here, "forward", []) == "runtime-error"


LACKING_ATTRIBUTE = """
import json

import torch
from torch import nn


class Block(nn.Module):
    \"\"\"Written against a release of ``json`` that has ``trace``: reached by 3-D inputs.\"\"\"

    def __init__(self, d_model: int = 16):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        seq_len, batch, _ = x.shape
        y = self.proj(x)
        json.trace("attn", y)
        return y
"""


def test_an_absent_attribute_outranks_the_shape_errors_of_later_inputs(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The inputs that fit reach a call the installed package lacks; inputs of other ranks
    fail on the unpacking after it. The verdict names the absent attribute, and its recipe
    holds the inputs that raised it, so a replay says the same."""
    from nnrag.recipes import recipe_to_dict
    from nnrag.validate.replay import differences
    from tests.probing import validate_text

    result = validate_text(sandbox, tmp_path, LACKING_ATTRIBUTE)
    assert (result.failed_stage, result.category) == ("forward", "missing-external")
    assert "module 'json' has no attribute 'trace'" in (result.message or "")
    assert result.recipe is not None
    replayed = validate_text(
        sandbox, tmp_path, LACKING_ATTRIBUTE, replay=recipe_to_dict(result.recipe)
    )
    assert differences(result, replayed) == ()


OPTIONAL_IMPORT = """
import torch
from torch import nn

try:
    from nnrag_absent_package.basis import Basis
except ModuleNotFoundError:
    print("this block needs nnrag_absent_package")

BASES = {"linear": Basis}


class Block(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)
"""


def test_a_name_left_unbound_by_an_optional_import_that_failed_is_a_missing_external(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The file's own handler swallows the failed import, and the next line's NameError is
    what the import raises: the category and the message name the absent package."""
    from tests.probing import validate_text

    result = validate_text(sandbox, tmp_path, OPTIONAL_IMPORT)
    assert (result.failed_stage, result.category) == ("import", "missing-external")
    assert "NameError: name 'Basis' is not defined" in (result.message or "")
    assert "install the package that provides 'nnrag_absent_package'" in (result.message or "")


NAMED_RANK = """
import torch
from torch import nn


class Block(nn.Module):  # a pair loss over embeddings and their labels
    def __init__(self, margin: float = 0.1):
        super().__init__()
        self.margin = margin

    def forward(self, embeddings, labels):
        if labels.ndim != 1:
            raise ValueError("labels must be a 1D tensor of shape (batch_size,)")
        same = labels[:, None] == labels[None, :]
        distances = torch.cdist(embeddings, embeddings)
        return (distances * same).mean() + self.margin
"""


def test_an_input_a_message_names_is_reshaped_to_the_rank_it_wants(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    from tests.probing import validate_text

    result = validate_text(sandbox, tmp_path, NAMED_RANK)
    assert result.passed, result.message
    assert result.recipe is not None
    assert len(result.recipe.inputs[1]["shape"]) == 1


KEYWORD_TARGET = """
import torch
from torch import nn


class Block(nn.Module):  # a binary metric: forward passes everything on to update
    def forward(self, *args, **kwargs):
        return self.update(*args, **kwargs)

    def update(self, preds, target):
        if preds.shape != target.shape:
            raise RuntimeError(
                "Predictions and targets are expected to have the same shape, but got"
                f" {preds.shape} and {target.shape}."
            )
        if target.is_floating_point():
            raise ValueError(
                "Expected argument `target` to be an int or long tensor with ground truth"
                f" labels but got tensor with dtype {target.dtype}"
            )
        if not set(target.unique().tolist()) <= {0, 1}:
            raise RuntimeError(
                f"Detected the following values in `target`: {target.unique()} but expected"
                " only the following values [0, 1]."
            )
        return ((preds.sigmoid() - target) ** 2).mean()
"""


def test_a_target_passed_by_keyword_is_shaped_and_labelled_as_messages_ask(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    from tests.probing import validate_text

    result = validate_text(sandbox, tmp_path, KEYWORD_TARGET)
    assert result.passed, result.message
    assert result.recipe is not None
    given = [*result.recipe.inputs[1:], *result.recipe.input_kwargs.values()]
    assert len(given) == 1
    assert given[0]["shape"] == result.recipe.inputs[0]["shape"]
    assert given[0]["dtype"] == "int64"


SOURCE_IMPORT_IN_FORWARD = """
import importlib

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        parts = ["nnrag_source_package", "ops"]  # its own source, by a computed name
        return importlib.import_module(".".join(parts)).fused(self.proj(x))
"""


def test_a_source_package_imported_by_name_in_forward_is_a_source_import(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    from tests.probing import validate_text

    result = validate_text(
        sandbox,
        tmp_path,
        SOURCE_IMPORT_IN_FORWARD,
        source_packages=frozenset({"nnrag_source_package"}),
    )
    assert (result.failed_stage, result.category) == ("forward", "source-import")
