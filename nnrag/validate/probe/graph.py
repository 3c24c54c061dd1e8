"""Sandbox child: forward inputs for graph layers (features, edge and scatter indices, batches)."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import torch

from nnrag.hookspecs import hookimpl
from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.profiles import Profile
from nnrag.validate.probe.rules import NO_MATCH, Rules
from nnrag.validate.probe.values import call, decode, remember, tensor_spec

NODES, EDGES = 10, 30
"""Nodes and edges of the probe graph (edges drop to ``NODES`` when the layer has no edge index)."""

_DETECT_INDEX = re.compile(r"^(i|j|idx_\w+)$")
_INDEX = re.compile(r"^(i|j|k|idx|index|idx_\w+|\w+_idx|\w+_index)$")
_TYPES = {"type_vec": "node", "node_type": "node", "edge_type": "edge"}
_TYPE_COUNTS = {
    "node": ("num_types", "num_node_types"),
    "edge": ("num_relations", "num_edge_types", "num_types"),
}
_WIDTH_KEYS = (
    "in_channels",
    "in_dim",
    "dim_in",
    "in_feats",
    "in_features",
    "channels",
    "dim",
    "hidden_channels",
    "emb_dim",
)
HETERO = (["a", "b"], [["a", "to", "b"], ["b", "to", "a"]])
"""Node and edge types when the constructor names none."""
_SIZE_KEY = re.compile(r"^(?!num_|out_|n_)\w*(channels|_dim|features)$")
_EDGE_KEY = re.compile(r"^(?!num_|out_|n_)\w*edge\w*(channels|_dim|features)$")
_POS = re.compile(r"^(pos|coords?|normals?|pos_\w+|\w+_pos)$")
_SCALAR_ROWS = re.compile(r"^(t|time|dist|angle|edge_weight|\w+_time|\w+_weight)$")
_BATCH_OBJECT = {"batch"}  # not `data`: elsewhere a dict of named inputs


def is_graph(forward_params: list[str], required: frozenset[str] = frozenset()) -> bool:
    """Graph layers: edge indices, dense ``adj``, scatter indices, node/edge types, batches."""
    names = set(forward_params)
    return bool(
        {"adj", "adj_t", "x_dict", "edge_attr", "edge_weight", *_TYPES} & names
        or any(name.endswith(("edge_index", "edge_index_dict")) for name in names)
        or "index" in required
        or (len(required) >= 2 and any(_DETECT_INDEX.match(name) for name in required))
        or (len(required) == 1 and required <= _BATCH_OBJECT and forward_params[0] in required)
        or ({"x", "batch"} <= required and forward_params[0] == "x")
    )


@dataclass(frozen=True, slots=True)
class Graph:
    """Sizes of one probe graph: node and edge counts, feature width, counts from the ctor."""

    nodes: int
    edges: int
    width: int
    edge_width: int | None
    ids: int  # node features are ids below this (0: float features)
    counts: Mapping[str, int]
    widths: Mapping[str, int]  # per input, from constructor names (``num_rbf`` -> ``rbf``)
    meta: tuple[list[str], list[list[str]]] = ([], [])


def graph_inputs(
    params: list[inspect.Parameter],
    profile: Profile,
    ctor: Mapping[str, object],
    first: tuple[str, int, list[int]],
) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """Input candidates for a graph layer, best first."""
    kind, size, _ = first
    channels = [size] if kind == "tokens" and size else []
    for key in _WIDTH_KEYS:
        value = ctor.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 4096:
            channels.append(value)
    sizes = {
        k: v
        for k, v in ctor.items()
        if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 4096
    }
    channels.extend(v for k, v in sizes.items() if _SIZE_KEY.match(k))
    channels = list(dict.fromkeys([*channels, profile.dim]))[:5]
    names = {p.name for p in params}
    widths = {
        name: sizes[key]
        for name in names
        for key in (f"num_{name}", f"n_{name}", f"{name}_dim", f"{name}_channels")
        if key in sizes
    }
    nodes = ctor.get("num_nodes")
    nodes = nodes if isinstance(nodes, int) and 1 < nodes <= 1000 else NODES
    edged = any(
        n.endswith(("edge_index", "edge_index_dict")) or n in {"adj", "adj_t"} for n in names
    )
    edge_dim = ctor.get("edge_dim")
    edge_width = edge_dim if isinstance(edge_dim, int) and edge_dim > 0 else None
    edge_size = edge_width or next((v for k, v in sizes.items() if _EDGE_KEY.match(k)), None)
    counts = {
        group: value
        for group, keys in _TYPE_COUNTS.items()
        for value in [next((ctor[k] for k in keys if isinstance(ctor.get(k), int)), None)]
        if isinstance(value, int) and value > 0
    }
    ids = min(size, 100) if kind == "ids" and size else 0
    meta = metadata(ctor) or HETERO
    required = {p.name for p in params if p.default is p.empty}
    if len(required) == 1 and required <= _BATCH_OBJECT and params and params[0].name in required:
        for c in channels:
            g = Graph(nodes, EDGES if edged else nodes, c, edge_size, ids, counts, widths)
            yield [batch_object(g)], {}
            if not ids:
                yield [batch_object(Graph(g.nodes, g.edges, c, edge_size, 4, counts, widths))], {}
        return
    # ids first when the first layer embeds; last, for layers with no sizes at all (labels)
    variants = [(channels[0], ids)] if ids else []
    labels = [] if ids or kind != "unknown" or any(_SIZE_KEY.match(k) for k in sizes) else [(1, 4)]
    for c, node_ids in [*variants, *((c, 0) for c in channels), *labels]:
        g = Graph(nodes, EDGES if edged else nodes, c, edge_size, node_ids, counts, widths, meta)
        args, kwargs = fill(params, g)
        if edge_width and "edge_attr" in names - required:
            yield args, {**kwargs, "edge_attr": tensor_spec([g.edges, edge_width])}
        yield args, kwargs
        if "edge_attr" in names - required and edge_width is None:
            yield args, {**kwargs, "edge_attr": tensor_spec([g.edges, c])}  # edge_dim=None


def fill(params: list[inspect.Parameter], g: Graph) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword inputs for the required (and graph-defining optional) parameters."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    first = True
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        wanted = p.name.endswith("edge_index") or (p.name in _TYPES and _TYPES[p.name] in g.counts)
        if p.default is not p.empty and not wanted:
            continue
        value = graph_value(p.name, p.annotation, g, first=first)
        first = False
        if p.kind == p.KEYWORD_ONLY or p.default is not p.empty:
            kwargs[p.name] = value
        else:
            args.append(value)
    return args, kwargs


def graph_value(name: str, annotation: Any, g: Graph, *, first: bool = False) -> Any:
    """The input for one forward parameter of a graph layer."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    if text == "int":
        return g.nodes if re.search(r"size|num|nodes|count", name) else 1
    if text == "str" and name.endswith("_type"):  # a type name: one the constructor knows
        return g.meta[0][0] if g.meta[0] else "a"
    edge_rows = g.edges if name.startswith("edge_") else g.nodes
    if name.endswith("_dict"):  # heterogeneous graphs: one entry per node or edge type
        node_types, edge_types = g.meta
        if name.endswith("edge_index_dict"):
            spec = tensor_spec([2, g.edges], "int64", g.nodes)
            return {"graph": "dict", "items": [[t, spec] for t in edge_types], "role": name}
        if "edge" in name:
            spec = tensor_spec([g.edges, g.edge_width or g.width])
            return {"graph": "dict", "items": [[t, spec] for t in edge_types], "role": name}
        spec = tensor_spec([g.nodes, g.width])
        return {"graph": "dict", "items": [[t, spec] for t in node_types], "role": name}
    if name.endswith("edge_index") or name == "adj_t":
        return role(tensor_spec([2, g.edges], "int64", g.nodes), name)
    if name == "adj":
        return role(tensor_spec([g.nodes, g.nodes]), name)
    if name in {"batch", "ptr"}:
        return {"zeros": [g.nodes]}
    if name in _TYPES:
        group = _TYPES[name]
        rows = g.edges if group == "edge" else g.nodes
        return role(tensor_spec([rows], "int64", g.counts.get(group, 1)), name)
    if _INDEX.match(name):
        if "edge" in name:
            return role(tensor_spec([2, g.edges], "int64", g.nodes), name)
        if name == "index":
            return {"graph": "index", "size": g.nodes, "groups": 3, "role": name}
        return role(tensor_spec([g.nodes], "int64", g.nodes), name)
    if name == "z" and g.ids:
        return role(tensor_spec([g.nodes], "int64", min(g.ids, 10)), name)  # atomic numbers
    if "mask" in name:
        return role(tensor_spec([edge_rows], "bool"), name)
    if _POS.match(name):
        return role(tensor_spec([g.nodes, 3]), name)
    if _SCALAR_ROWS.match(name):
        return role(tensor_spec([edge_rows]), name)
    if name == "edge_attr" or name.startswith("edge_"):
        return role(tensor_spec([g.edges, g.widths.get(name) or g.edge_width or g.width]), name)
    if first and g.ids:
        return role(tensor_spec([g.nodes], "int64", g.ids), name)
    return role(tensor_spec([g.nodes, g.widths.get(name, g.width)]), name)


def metadata(ctor: Mapping[str, object]) -> tuple[list[str], list[list[str]]] | None:
    """Node and edge types from a ``(node_types, edge_types)`` or edge-type-list argument."""
    for value in ctor.values():
        if (
            isinstance(value, (list, tuple))
            and value
            and all(
                isinstance(e, (list, tuple)) and len(e) == 3 and all(isinstance(p, str) for p in e)
                for e in value
            )
        ):
            edges = [[str(p) for p in e] for e in value]
            return list(dict.fromkeys(t for e in edges for t in (e[0], e[2]))), edges
        if not (isinstance(value, (tuple, list)) and len(value) == 2):
            continue
        nodes, edges = value
        if (
            isinstance(nodes, (list, tuple))
            and isinstance(edges, (list, tuple))
            and nodes
            and all(isinstance(n, str) for n in nodes)
            and all(isinstance(e, (list, tuple)) and len(e) == 3 for e in edges)
        ):
            return [str(n) for n in nodes], [[str(p) for p in e] for e in edges]
    return None


def role(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """Mark a spec as a graph input (the graph repairs act only on marked specs)."""
    return {**spec, "role": name}


def batch_object(g: Graph) -> dict[str, Any]:
    """A spec for a mini-batch object of one graph (``batch.x``, ``batch.edge_index``...)."""
    x = tensor_spec([g.nodes], "int64", g.ids) if g.ids else tensor_spec([g.nodes, g.width])
    return {
        "graph": "batch",
        "fields": {
            "x": x,
            "edge_index": tensor_spec([2, g.edges], "int64", g.nodes),
            "edge_attr": tensor_spec([g.edges, g.edge_width or g.width]),
            "batch": {"zeros": [g.nodes]},
            "ptr": {"graph": "ptr", "size": g.nodes},
            "y": tensor_spec([g.nodes], "int64", 2),
            "edge_label_index": tensor_spec([2, g.edges], "int64", g.nodes),
            "edge_label": tensor_spec([g.edges], "int64", 2),
            "num_nodes": g.nodes,
            "num_graphs": 1,
        },
    }


class GraphBatch:
    """A mini-batch of one graph: attribute and item access, ``in`` and ``keys()``."""

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self.__dict__.update(fields)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __contains__(self, key: object) -> bool:
        return key in self.__dict__

    def keys(self) -> list[str]:
        return list(self.__dict__)


def build_graph(value: Mapping[str, Any]) -> Any:
    """Build a graph spec that plain tensor specs cannot describe (sorted index, batch object)."""
    if "zeros" in value:
        return torch.zeros(value["zeros"], dtype=torch.long)
    kind = value.get("graph")
    if kind == "index":  # sorted scatter index: segment aggregations need sorted groups
        size, groups = int(value["size"]), int(value["groups"])
        return torch.arange(size) * groups // size
    if kind == "ptr":
        return torch.tensor([0, int(value["size"])])
    if kind == "dict":
        return {
            tuple(key) if isinstance(key, list) else key: build_graph(spec)
            for key, spec in value["items"]
        }
    if kind == "batch":
        return GraphBatch(
            {
                k: build_graph(v)
                if isinstance(v, dict) and ("graph" in v or "zeros" in v)
                else decode(v)
                for k, v in value["fields"].items()
            }
        )
    return decode(dict(value))


def is_graph_spec(args: list[Any]) -> bool:
    return any(isinstance(a, dict) and ("role" in a or "graph" in a) for a in args)


_MATMUL = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
_ROWS = re.compile(
    r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton"
    r" dimension 0|Expected size (\d+) but got size (\d+)|mask \[(\d+)\] at index 0 does not"
    r" match the shape of the indexed tensor \[(\d+)"
)


def graph_repair(message: str, args: list[Any]) -> list[Any] | None:
    """New graph inputs from an error message (feature widths, row counts, ids), or ``None``."""
    if len(args) == 1 and isinstance(args[0], dict) and args[0].get("graph") == "batch":
        fields = args[0]["fields"]
        keys = [k for k, v in fields.items() if isinstance(v, dict) and "shape" in v]
        fixed = graph_repair(message, [{**fields[k], "role": k} for k in keys])
        if fixed is None:
            return None
        new = {
            k: {n: v for n, v in spec.items() if n != "role"}
            for k, spec in zip(keys, fixed, strict=True)
        }
        return [{**args[0], "fields": {**fields, **new}}]
    floats = {  # the float feature inputs by position, with their shapes
        i: list(a["shape"])
        for i, a in enumerate(args)
        if isinstance(a, dict) and "shape" in a and a["dtype"] == "float32"
    }
    found = GRAPH_RULES.first(message, _Tried(args, floats))
    return None if found is NO_MATCH else cast(list[Any] | None, found)


@dataclass(frozen=True, slots=True)
class _Tried:
    """What a graph rule sees: the inputs tried, and the float feature inputs by position
    with their shapes."""

    args: list[Any]
    floats: dict[int, list[int]]


GRAPH_RULES: Rules[_Tried] = Rules()
"""Graph-input error rules, in the order the messages are recognized: a rule answers a new
input list, ``None`` (its kind, no fix) or ``NO_MATCH``."""
_rule = GRAPH_RULES.rule


def _replaced(args: list[Any], i: int, spec: dict[str, Any]) -> list[Any]:
    return [spec if j == i else a for j, a in enumerate(args)]


@_rule(_MATMUL.pattern)
def _widths(m: re.Match[str], t: _Tried) -> object:
    """A matrix product's widths: change the input of that width (nearest row count)."""
    args, floats = t.args, t.floats
    rows, got, want = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hits = [i for i, shape in floats.items() if shape[-1] == got]
    exact = [i for i in hits if math.prod(floats[i][:-1]) == rows]
    # no exact row count: the closest one (self loops added or removed change the rows)
    hits = exact or sorted(hits, key=lambda i: abs(math.prod(floats[i][:-1]) - rows))
    # Several inputs may share the width: change an untouched one first; an input changed
    # before that now mismatches was right all along, so it goes back and stays.
    fresh = [i for i in hits if "fixed" not in args[i]]
    once = [i for i in hits if args[i].get("fixed") == "width"]
    for i, mark in [*((i, "width") for i in fresh), *((i, "locked") for i in once)][:1]:
        return _replaced(args, i, dict(args[i], shape=[*args[i]["shape"][:-1], want], fixed=mark))
    return None


@_rule(
    r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton"
    r" dimension 1"
)
def _channels(m: re.Match[str], t: _Tried) -> object:
    args = t.args
    want, got = int(m.group(1)), int(m.group(2))
    hits = [i for i, shape in t.floats.items() if shape[-1] == got and len(shape) == 2]
    for i in hits[:1]:
        return _replaced(args, i, dict(args[i], shape=[args[i]["shape"][0], want], fixed="locked"))
    return None


@_rule(r"expected input with shape \[\*, (\d+)\], but got input of size\s*\[([\d, ]+)\]")
def _tail(m: re.Match[str], t: _Tried) -> object:
    width, seen = int(m.group(1)), [int(v) for v in m.group(2).split(",")]
    hits = [i for i, shape in t.floats.items() if shape == seen]
    for i in hits[:1]:
        return _replaced(t.args, i, dict(t.args[i], shape=[*seen[:-1], width], fixed="locked"))
    return None


@_rule(r"shape must be \[(\w+(?:, \w+)+)\]")
def _pairs(m: re.Match[str], t: _Tried) -> object:
    rank = len(m.group(1).split(","))
    for i in list(t.floats)[:1]:
        shape = list(t.args[i]["shape"])
        if len(shape) == rank - 1:
            return _replaced(t.args, i, dict(t.args[i], shape=[*shape[:-1], 2, shape[-1]]))
    return None


@_rule(_ROWS.pattern)
def _row_counts(m: re.Match[str], t: _Tried) -> object:
    sizes = {int(v) for v in m.groups() if v}
    if len(sizes) != 2:
        return None
    small, large = sorted(sizes)
    fixed = [_rows(a, large, small) for a in t.args]
    return fixed if fixed != t.args else None


@_rule(r"Found indices in '(\w+)' that are larger than (\d+)")
def _index_bound(m: re.Match[str], t: _Tried) -> object:
    high = int(m.group(2)) + 1
    fixed = [
        dict(a, high=min(high, a.get("high", high)))
        if isinstance(a, dict) and a.get("dtype") == "int64" and "shape" in a
        else a
        for a in t.args
    ]
    return fixed if fixed != t.args else None


@_rule(r"tensors used as indices must be long|Long, Int|Expected tensor for argument #1 'indices'")
def _long_indices(m: re.Match[str], t: _Tried) -> object:
    for i in t.floats:
        spec = dict(t.args[i], shape=t.args[i]["shape"][:1], dtype="int64", high=4)
        return _replaced(t.args, i, spec)
    return None


@_rule(r"index out of range in self|index (\d+) is out of bounds for dimension 0 with size (\d+)")
def _out_of_range(m: re.Match[str], t: _Tried) -> object:
    high = int(m.group(2)) if m.group(2) else 2
    fixed = [
        dict(a, high=high)
        if isinstance(a, dict)
        and a.get("dtype") == "int64"
        and "shape" in a
        and a.get("high", 0) > high
        and not str(a.get("role", "")).endswith("index")
        else a
        for a in t.args
    ]
    return fixed if fixed != t.args else None


@_rule(r"too many indices for tensor of dimension 1")
def _index_rank(m: re.Match[str], t: _Tried) -> object:
    for i, a in enumerate(t.args):
        if isinstance(a, dict) and "shape" in a and a["dtype"] == "int64" and len(a["shape"]) == 1:
            return _replaced(t.args, i, dict(a, shape=[*a["shape"], 2]))
    return None


def _rows(value: Any, large: int, small: int) -> Any:
    """Shrink a row count (or an edge count) from ``large`` to ``small``."""
    if not (isinstance(value, dict) and "shape" in value and value["shape"]):
        return value
    shape = list(value["shape"])
    if shape[0] == large:
        shape[0] = small
    elif len(shape) == 2 and shape[0] == 2 and shape[1] == large and value["dtype"] == "int64":
        shape[1] = small
    return dict(value, shape=shape) if shape != value["shape"] else value


def called_class(ctor: Ctor, messages: list[str]) -> Ctor | None:
    """Constructor repair read from forward errors: a class argument used as a function.

    ``act: Callable`` synthesized as the class ``nn.ReLU`` fails in forward with "must be Tensor,
    not ReLU" or "'ReLU' and 'Tensor'": the layer calls ``act(x)``, so it gets ``nn.ReLU()``.
    """
    if ctor.origin != "synthesized":
        return None
    for message in messages:
        for name, value in ctor.kwargs.items():
            if not isinstance(value, type) or not re.search(
                rf"(?:not |got |')({re.escape(value.__name__)})\b", message
            ):
                continue
            try:  # remembered: the recipe writes it as the call, not a lossy repr
                instance = remember(value(), call(value))
            except Exception:
                continue
            kwargs = {**ctor.kwargs, name: instance}
            placeholders = ctor.placeholders
            return Ctor(ctor.origin, ctor.args, kwargs, placeholders, ctor.profile, ctor.inputs)
    return None


@hookimpl
def nnrag_input_candidates(
    block: Any, params: list[inspect.Parameter], profile: Profile, ctor: dict[str, Any]
) -> list[tuple[list[Any], dict[str, Any]]] | None:
    """Built-in plugin: graph inputs for blocks whose ``forward`` reads graph arguments."""
    from nnrag.validate.probe.layers import first_layer

    names = [p.name for p in params]
    required = frozenset(p.name for p in params if p.default is p.empty)
    if not is_graph(names, required):
        return None
    return list(graph_inputs(params, profile, ctor, first_layer(block)))
