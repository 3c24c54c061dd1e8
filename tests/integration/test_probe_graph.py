"""Graph-layer inputs and repairs on small hand-made message-passing modules."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from nnrag.validate.probe.ctor import Ctor  # noqa: E402
from nnrag.validate.probe.graph import (  # noqa: E402
    GraphBatch,
    build_graph,
    called_class,
    graph_repair,
    is_graph,
)
from nnrag.validate.probe.inputs import build_inputs, first_layer, forward_params, input_candidates  # noqa: E402
from nnrag.validate.probe.profiles import PROFILES  # noqa: E402
from nnrag.validate.probe.runner import Runner  # noqa: E402
from nnrag.validate.probe.values import (  # noqa: E402
    decode,
    encode,
    tensor_spec,
)

pytestmark = pytest.mark.integration
P = PROFILES[0]


def candidates(module: Any, **ctor: object) -> list[tuple[list[Any], dict[str, Any]]]:
    return list(input_candidates(module, P, ctor))


def runs(module: Any, **ctor: object) -> tuple[list[Any], dict[str, Any]] | None:
    """The first candidate that runs (after graph repairs), like the sandbox child does."""
    from nnrag.validate.probe.inputs import repair

    queue = candidates(module, **ctor)
    for _ in range(20):
        if not queue:
            return None
        args, kwargs = queue.pop(0)
        real_args, real_kwargs = build_inputs(args, kwargs, 0)
        try:
            module(*real_args, **real_kwargs)
        except Exception as error:
            fixed = repair(str(error), args, P)
            if fixed is not None:
                queue.insert(0, (fixed, kwargs))
            continue
        return args, kwargs
    return None


# --------------------------------------------------------------------------- modules


class TypedLinear(nn.Module):
    """One weight per node type (``type_vec`` indexes ``num_types`` weights)."""

    def __init__(self, in_channels: int, out_channels: int, num_types: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_types, in_channels, out_channels))

    def forward(self, x, type_vec):
        return torch.bmm(x.unsqueeze(1), self.weight[type_vec]).squeeze(1)


class RelConv(nn.Module):
    """A relational convolution: ``edge_type`` is optional in the signature but needed."""

    def __init__(self, in_channels: int, out_channels: int, num_relations: int):
        super().__init__()
        self.rel = nn.Embedding(num_relations, in_channels)
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index, edge_type=None):
        src, dst = edge_index
        msg = x[src] * self.rel(edge_type)
        return self.lin(torch.zeros_like(x).index_add_(0, dst, msg))


class Triplets(nn.Module):
    """Edge messages gathered by index vectors ``i``/``idx_kj`` with a second feature set."""

    def __init__(self, hidden_channels: int, num_radial: int):
        super().__init__()
        self.lin = nn.Linear(hidden_channels, hidden_channels)
        self.lin_rbf = nn.Linear(num_radial, hidden_channels)

    def forward(self, x, rbf, i, idx_kj):
        h = self.lin(x) * self.lin_rbf(rbf)
        return torch.zeros_like(h).index_add_(0, i, h[idx_kj])


class AtomEmbedding(nn.Module):
    """Node features are atom ids into an embedding table."""

    def __init__(self, hidden_channels: int):
        super().__init__()
        self.emb = nn.Embedding(20, hidden_channels)

    def forward(self, x, edge_index):
        src, dst = edge_index
        h = self.emb(x)
        return torch.zeros_like(h).index_add_(0, dst, h[src])


class SortedPool(nn.Module):
    """A segment aggregation that refuses unsorted scatter indices."""

    def __init__(self, channels: int):
        super().__init__()
        self.lin = nn.Linear(channels, channels)

    def forward(self, x, index):
        if not bool((index[1:] >= index[:-1]).all()):
            raise ValueError("index is not sorted")
        return torch.zeros(int(index.max()) + 1, x.size(1)).index_add_(0, index, self.lin(x))


class BatchHead(nn.Module):
    """A GraphGym-style layer: reads and writes attributes of a mini-batch object."""

    def __init__(self, dim_in: int):
        super().__init__()
        self.norm = nn.BatchNorm1d(dim_in)

    def forward(self, batch):
        batch.x = self.norm(batch.x)
        return batch


class KnownGraph(nn.Module):
    """A model over a fixed node set: edge indices must stay below ``num_nodes``."""

    def __init__(self, num_nodes: int, embedding_dim: int):
        super().__init__()
        self.emb = nn.Embedding(num_nodes, embedding_dim)

    def forward(self, edge_index):
        src, dst = edge_index
        return (self.emb(src) * self.emb(dst)).sum(-1)


class TimedEdges(nn.Module):
    """Node features plus per-row times (1-D) and an int ``dim_size``."""

    def __init__(self, channels: int):
        super().__init__()
        self.lin = nn.Linear(channels, channels)

    def forward(self, msg, index, t, dim_size: int):
        out = torch.zeros(dim_size, msg.size(1)).index_add_(0, index, self.lin(msg))
        return out + t.mean()


class TwoSets(nn.Module):
    """Node and edge embeddings sized by two constructor arguments that name no input."""

    def __init__(self, hidden_node_channels: int, hidden_edge_channels: int):
        super().__init__()
        self.lin = nn.Linear(hidden_node_channels + hidden_edge_channels, hidden_node_channels)

    def forward(self, node_emb, edge_emb, i):
        agg = torch.zeros(node_emb.size(0), edge_emb.size(1)).index_add_(0, i, edge_emb)
        return self.lin(torch.cat([node_emb, agg], dim=1))


class OptionalTypes(nn.Module):
    """``type_vec`` is optional in the signature but the layer needs it."""

    def __init__(self, in_channels: int, num_types: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_types, in_channels))

    def forward(self, x, type_vec=None, type_ptr=None):
        if type_vec is None and type_ptr is None:
            raise ValueError("Either 'type_vec' or 'type_ptr' must be given")
        return x * self.weight[type_vec]


class LabelHash(nn.Module):
    """No parameters, no sizes: node features must be integer labels."""

    def forward(self, x, edge_index):
        assert x.dtype == torch.long
        src, dst = edge_index
        return torch.zeros(x.size(0), dtype=torch.long).index_add_(0, dst, x[src])


class LayeredFeatures(nn.Module):
    """Node features with a layer axis: ``[num_nodes, num_layers, channels]``."""

    def __init__(self, channels: int):
        super().__init__()
        self.lin = nn.Linear(channels, channels)

    def forward(self, x, edge_index):
        if x.dim() != 3:
            raise ValueError("Feature shape must be [num_nodes, num_layers, channels].")
        return self.lin(x[:, -1])


class HeteroSum(nn.Module):
    """A heterogeneous layer: features and edge indices keyed by node and edge types."""

    def __init__(self, in_channels: int, metadata: Any):
        super().__init__()
        self.lins = nn.ModuleDict({t: nn.Linear(in_channels, 4) for t in metadata[0]})

    def forward(self, x_dict, edge_index_dict):
        out = {t: self.lins[t](x) for t, x in x_dict.items()}
        for (src, _, dst), edge_index in edge_index_dict.items():
            out[dst] = out[dst].index_add(0, edge_index[1], out[src][edge_index[0]])
        return out


class PathEmbedding(nn.Module):
    """Embeddings per node type along a metapath; forward takes a type name."""

    def __init__(self, metapath: Any, embedding_dim: int):
        super().__init__()
        types = {t for edge in metapath for t in (edge[0], edge[2])}
        self.emb = nn.ParameterDict({t: nn.Parameter(torch.ones(3, embedding_dim)) for t in types})

    def forward(self, node_type: str):
        return self.emb[node_type]


# --------------------------------------------------------------------------- detection


def test_detection_from_parameter_names() -> None:
    assert is_graph(["x", "edge_index"])
    assert is_graph(["x", "type_vec"], frozenset({"x", "type_vec"}))
    assert is_graph(["x", "rbf", "i", "j"], frozenset({"x", "rbf", "i", "j"}))
    assert is_graph(["batch"], frozenset({"batch"}))
    assert not is_graph(["data"], frozenset({"data"}))  # a dict of named inputs elsewhere
    assert not is_graph(["x", "block_idx"], frozenset({"x", "block_idx"}))
    assert not is_graph(["x", "mask"], frozenset({"x"}))
    assert is_graph(["x", "batch"], frozenset({"x", "batch"}))
    assert not is_graph(["h", "batch"], frozenset({"h", "batch"}))


# --------------------------------------------------------------------------- inputs


def test_type_vector_is_bounded_by_the_type_count() -> None:
    block = TypedLinear(8, 4, num_types=3)
    args, _ = candidates(block, in_channels=8, num_types=3)[0]
    assert args[0]["shape"] == [10, 8]
    assert (args[1]["dtype"], args[1]["high"]) == ("int64", 3)
    assert runs(block, in_channels=8, num_types=3) is not None


def test_optional_edge_type_is_given_when_the_ctor_counts_relations() -> None:
    block = RelConv(8, 4, num_relations=5)
    args, kwargs = candidates(block, in_channels=8, num_relations=5)[0]
    assert kwargs["edge_type"]["shape"] == [args[1]["shape"][1]]
    assert kwargs["edge_type"]["high"] == 5
    assert runs(block, in_channels=8, num_relations=5) is not None


def test_index_vectors_and_a_second_feature_width_are_repaired() -> None:
    block = Triplets(hidden_channels=16, num_radial=6)
    found = runs(block, hidden_channels=16, num_radial=6)
    assert found is not None
    args, _ = found
    assert [a["shape"] for a in args[:2]] == [[10, 16], [10, 6]]
    assert args[2]["dtype"] == args[3]["dtype"] == "int64"


def test_embedding_first_layer_makes_node_ids() -> None:
    block = AtomEmbedding(hidden_channels=8)
    args, _ = candidates(block, hidden_channels=8)[0]
    assert (args[0]["shape"], args[0]["dtype"], args[0]["high"]) == ([10], "int64", 20)
    assert runs(block, hidden_channels=8) is not None


def test_scatter_index_is_sorted() -> None:
    block = SortedPool(8)
    args, _ = candidates(block, channels=8)[0]
    index = build_graph(args[1])
    assert index.tolist() == sorted(index.tolist())
    assert int(index.max()) == 2
    assert runs(block, channels=8) is not None


def test_batch_object_carries_graph_fields() -> None:
    block = BatchHead(dim_in=12)
    args, _ = candidates(block, dim_in=12)[0]
    real, _ = build_inputs(args, {}, 0)
    assert isinstance(real[0], GraphBatch)
    assert real[0].x.shape == (10, 12)
    assert "edge_index" in real[0]
    assert real[0]["edge_index"].shape[0] == 2
    assert runs(block, dim_in=12) is not None


def test_node_count_from_the_constructor() -> None:
    block = KnownGraph(num_nodes=4, embedding_dim=8)
    args, _ = candidates(block, num_nodes=4, embedding_dim=8)[0]
    assert args[0]["high"] == 4
    assert runs(block, num_nodes=4, embedding_dim=8) is not None


def test_times_are_rows_and_int_sizes_are_ints() -> None:
    block = TimedEdges(8)
    args, _ = candidates(block, channels=8)[0]
    assert args[2]["shape"] == [10]
    assert args[3] == 10
    assert runs(block, channels=8) is not None


def test_widths_from_other_constructor_sizes() -> None:
    block = TwoSets(hidden_node_channels=12, hidden_edge_channels=12)
    assert runs(block, hidden_node_channels=12, hidden_edge_channels=12) is not None


def test_optional_type_vector_is_given() -> None:
    block = OptionalTypes(in_channels=8, num_types=3)
    _, kwargs = candidates(block, in_channels=8, num_types=3)[0]
    assert kwargs["type_vec"]["high"] == 3
    assert "type_ptr" not in kwargs
    assert runs(block, in_channels=8, num_types=3) is not None


def test_label_features_are_tried_last() -> None:
    found = runs(LabelHash())
    assert found is not None
    assert found[0][0]["dtype"] == "int64"
    assert candidates(LabelHash())[0][0][0]["dtype"] == "float32"


def test_rank_from_a_named_shape() -> None:
    found = runs(LayeredFeatures(8), channels=8)
    assert found is not None
    assert found[0][0]["shape"] == [10, 2, 8]


def test_heterogeneous_inputs_follow_the_constructor_metadata() -> None:
    meta = (["paper", "author"], [("paper", "cites", "paper"), ("author", "writes", "paper")])
    block = HeteroSum(8, meta)
    args, _ = candidates(block, in_channels=8, metadata=meta)[0]
    x_dict, edge_index_dict = build_inputs(args, {}, 0)[0]
    assert set(x_dict) == {"paper", "author"}
    assert set(edge_index_dict) == {("paper", "cites", "paper"), ("author", "writes", "paper")}
    assert x_dict["paper"].shape == (10, 8)
    assert runs(block, in_channels=8, metadata=meta) is not None


def test_type_name_argument_comes_from_the_metapath() -> None:
    path = [("author", "writes", "paper"), ("paper", "by", "author")]
    block = PathEmbedding(path, 4)
    args, _ = candidates(block, metapath=path, embedding_dim=4)[0]
    assert args == ["author"]
    assert runs(block, metapath=path, embedding_dim=4) is not None


# --------------------------------------------------------------------------- repairs


def test_matmul_repair_changes_the_argument_with_that_width() -> None:
    args = [
        {**tensor_spec([10, 16]), "role": "x"},
        {**tensor_spec([10, 16]), "role": "rbf"},
        {**tensor_spec([10, 32]), "role": "sbf"},
    ]
    fixed = graph_repair("mat1 and mat2 shapes cannot be multiplied (10x32 and 6x16)", args)
    assert fixed is not None
    assert [a["shape"] for a in fixed] == [[10, 16], [10, 16], [10, 6]]


def test_row_mismatch_shrinks_edge_rows_to_node_rows() -> None:
    args = [
        {**tensor_spec([2, 30], "int64", 10), "role": "edge_index"},
        {**tensor_spec([30, 4]), "role": "edge_attr"},
        {**tensor_spec([10, 4]), "role": "x"},
    ]
    message = (
        "The size of tensor a (10) must match the size of tensor b (30)"
        " at non-singleton dimension 0"
    )
    fixed = graph_repair(message, args)
    assert fixed is not None
    assert [a["shape"] for a in fixed] == [[2, 10], [10, 4], [10, 4]]


def test_float_used_as_index_becomes_ids() -> None:
    args = [{**tensor_spec([10, 16]), "role": "x"}, {**tensor_spec([10]), "role": "t"}]
    fixed = graph_repair("tensors used as indices must be long, int, byte or bool tensors", args)
    assert fixed is not None
    assert (fixed[0]["shape"], fixed[0]["dtype"]) == ([10], "int64")


def test_matmul_repair_without_exact_rows_takes_the_closest_rows() -> None:
    args = [{**tensor_spec([10, 16]), "role": "x"}, {**tensor_spec([30, 16]), "role": "edge_attr"}]
    fixed = graph_repair("mat1 and mat2 shapes cannot be multiplied (27x16 and 2x32)", args)
    assert fixed is not None
    assert [a["shape"] for a in fixed] == [[10, 16], [30, 2]]


def test_wrong_width_goes_back_when_an_elementwise_product_mismatches() -> None:
    args = [{**tensor_spec([10, 2]), "role": "x"}, {**tensor_spec([10, 2]), "role": "rbf"}]
    message = (
        "The size of tensor a (64) must match the size of tensor b (2) at non-singleton dimension 1"
    )
    fixed = graph_repair(message, args)
    assert fixed is not None
    assert [a["shape"] for a in fixed] == [[10, 64], [10, 2]]


def test_layer_norm_width_repair() -> None:
    args = [{**tensor_spec([10, 16]), "role": "x"}, {**tensor_spec([10, 3, 16]), "role": "vec"}]
    message = (
        "Given normalized_shape=[32], expected input with shape [*, 32],"
        " but got input of size[10, 16]"
    )
    fixed = graph_repair(message, args)
    assert fixed is not None
    assert [a["shape"] for a in fixed] == [[10, 32], [10, 3, 16]]


def test_batch_object_fields_are_repaired() -> None:
    block = BatchHead(dim_in=12)
    args, _ = candidates(block, dim_in=12)[0]
    bad = [{**args[0], "fields": {**args[0]["fields"], "x": tensor_spec([10, 5])}}]
    fixed = graph_repair("mat1 and mat2 shapes cannot be multiplied (10x5 and 12x4)", bad)
    assert fixed is not None
    assert fixed[0]["fields"]["x"]["shape"] == [10, 12]
    assert "role" not in fixed[0]["fields"]["x"]


def test_unrelated_message_is_no_repair() -> None:
    args = [{**tensor_spec([10, 16]), "role": "x"}]
    assert graph_repair("something else went wrong", args) is None


def test_first_layer_and_params_of_a_graph_block() -> None:
    block = RelConv(8, 4, num_relations=2)
    assert first_layer(block)[0] == "ids"  # the relation embedding comes first
    assert [p.name for p in forward_params(block)] == ["x", "edge_index", "edge_type"]


def test_runner_passes_a_relational_layer(tmp_path: Any) -> None:
    path = tmp_path / "block.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Rel(nn.Module):\n"
        "    def __init__(self, in_channels: int, num_relations: int):\n"
        "        super().__init__()\n"
        "        self.w = nn.Parameter(torch.randn(num_relations, in_channels))\n\n"
        "    def forward(self, x, edge_index, edge_type=None):\n"
        "        src, dst = edge_index\n"
        "        msg = x[src] * self.w[edge_type]\n"
        "        return torch.zeros_like(x).index_add_(0, dst, msg)\n"
    )
    sent: list[dict[str, Any]] = []
    request = {"path": str(path), "class_name": "Rel", "depth": "forward", "timeout_s": 30}
    Runner(request, sent.append, []).run()
    result = sent[-1]
    assert result["failed_stage"] is None, result["message"]
    assert result["recipe"]["input_kwargs"]["edge_type"]["dtype"] == "int64"


def test_class_used_as_a_function_gets_an_instance() -> None:
    ctor = Ctor("synthesized", (), {"hidden_channels": 8, "act": nn.ReLU})
    messages = ["linear(): argument 'input' (position 1) must be Tensor, not ReLU"]
    fixed = called_class(ctor, messages)
    assert fixed is not None
    assert isinstance(fixed.kwargs["act"], nn.ReLU)
    # the recipe writes the instance as its constructor call, so a replay gets a ReLU too
    assert isinstance(decode(encode(fixed.kwargs["act"], strict=True)), nn.ReLU)
    assert encode(fixed.kwargs["act"], strict=True) == {  # the recipe rebuilds it
        "__call__": {"__ref__": "torch.nn.modules.activation:ReLU"},
        "args": [],
    }
    assert fixed.kwargs["hidden_channels"] == 8
    other = ["unsupported operand type(s) for *: 'ReLU' and 'Tensor'"]
    assert called_class(ctor, other) is not None
    assert called_class(ctor, ["mat1 and mat2 shapes cannot be multiplied"]) is None
    assert called_class(Ctor("hinted", (), {"act": nn.ReLU}), messages) is None


def test_runner_instantiates_a_called_activation(tmp_path: Any) -> None:
    path = tmp_path / "block.py"
    path.write_text(
        "from typing import Callable\n\nimport torch\nfrom torch import nn\n\n\n"
        "class Residual(nn.Module):\n"
        "    def __init__(self, hidden_channels: int, act: Callable):\n"
        "        super().__init__()\n"
        "        self.act = act\n"
        "        self.lin = nn.Linear(hidden_channels, hidden_channels)\n\n"
        "    def forward(self, x):\n"
        "        return x + self.act(self.lin(x))\n"
    )
    sent: list[dict[str, Any]] = []
    request = {"path": str(path), "class_name": "Residual", "depth": "forward", "timeout_s": 30}
    Runner(request, sent.append, []).run()
    result = sent[-1]
    assert result["failed_stage"] is None, result["message"]
