"""Sandbox child: forward inputs for graph layers (node features, edge index, scatter index)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import Any

from nnrag.probe_args import Profile, tensor_spec


def is_graph(forward_params: list[str], required: frozenset[str] = frozenset()) -> bool:
    """Graph layers: ``forward(x, edge_index, ...)``, dense ``adj``, or a scatter ``index``."""
    return bool(
        {"adj", "adj_t"} & set(forward_params)
        or any(name.endswith("edge_index") for name in forward_params)
        or "index" in required
    )


def graph_inputs(
    params: list[inspect.Parameter],
    profile: Profile,
    ctor: Mapping[str, object],
    first: tuple[str, int, list[int]],
) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    n_nodes, n_edges = 10, 30
    kind, size, _ = first
    channels = [size] if kind == "tokens" and size else []
    for key in ("in_channels", "in_dim", "in_feats", "channels", "dim", "hidden_channels"):
        value = ctor.get(key)
        if isinstance(value, int) and value > 0 and value not in channels:
            channels.append(value)
    channels.append(profile.dim)
    edge_dim = ctor.get("edge_dim")
    names = {p.name for p in params}
    for c in channels:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in params:
            if p.kind in (p.VAR_KEYWORD,) or (
                p.default is not p.empty and not p.name.endswith("edge_index")
            ):
                continue
            width = edge_dim if p.name == "edge_attr" and isinstance(edge_dim, int) else c
            value = graph_value(p.name, width, n_nodes, n_edges)
            if p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        required = {p.name for p in params if p.default is p.empty}
        if isinstance(edge_dim, int) and edge_dim > 0 and "edge_attr" in names - required:
            yield args, {**kwargs, "edge_attr": tensor_spec([n_edges, edge_dim])}
        yield args, kwargs
        if "edge_attr" in names - required and not isinstance(edge_dim, int):
            yield args, {**kwargs, "edge_attr": tensor_spec([n_edges, c])}  # edge_dim=None


def graph_value(name: str, channels: int, n_nodes: int, n_edges: int) -> Any:
    if name in {"edge_index", "adj_t"}:
        return tensor_spec([2, n_edges], "int64", n_nodes)
    if name == "adj":
        return tensor_spec([n_nodes, n_nodes])
    if name in {"batch", "ptr"}:
        return {"zeros": [n_nodes]}
    if name.endswith("_index") and "edge" in name:
        return tensor_spec([2, n_edges], "int64", n_nodes)
    if name == "index" or name.endswith(("_index", "_idx")) or name.startswith("idx"):
        return tensor_spec([n_nodes], "int64", 3)  # a scatter index over the nodes
    if name == "edge_weight":
        return tensor_spec([n_edges])
    if name == "edge_attr":
        return tensor_spec([n_edges, channels])
    if name in {"pos", "coords"}:
        return tensor_spec([n_nodes, 3])
    if name in {"edge_type", "node_type"}:
        return tensor_spec([n_edges if name == "edge_type" else n_nodes], "int64", 1)
    return tensor_spec([n_nodes, channels])
