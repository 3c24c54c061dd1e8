"""Recipes as plain JSON data: how a block was built and fed, for the cache, the sandbox
request, the JSON report and ``nnrag replay``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nnrag.model import Recipe


def recipe_to_dict(recipe: Recipe) -> dict[str, Any]:
    """A JSON-ready dict of a recipe (the inverse of :func:`recipe_from_dict`)."""
    return {
        "origin": recipe.origin,
        "init_args": list(recipe.init_args),
        "init_kwargs": dict(recipe.init_kwargs),
        "inputs": list(recipe.inputs),
        "input_kwargs": dict(recipe.input_kwargs),
        "seed": recipe.seed,
        "input_seed": recipe.input_seed,
        "output_shapes": list(recipe.output_shapes),
        "output_digest": recipe.output_digest,
        "parameters": recipe.parameters,
        "attempts": recipe.attempts,
        "lossless": recipe.lossless,
        "lossy": list(recipe.lossy),
        "placeholders": list(recipe.placeholders),
    }


def recipe_from_dict(data: Mapping[str, Any]) -> Recipe:
    """A :class:`Recipe` from a dict as written by the sandbox child or the cache."""
    origin = data.get("origin", "none")
    return Recipe(
        origin=origin if origin in {"hinted", "harvested", "synthesized"} else "none",
        init_args=tuple(data.get("init_args") or ()),
        init_kwargs=dict(data.get("init_kwargs") or {}),
        inputs=tuple(data.get("inputs") or ()),
        input_kwargs=dict(data.get("input_kwargs") or {}),
        seed=int(data.get("seed") or 0),
        input_seed=None if data.get("input_seed") is None else int(data["input_seed"]),
        output_shapes=tuple(data.get("output_shapes") or ()),
        parameters=data.get("parameters"),
        attempts=int(data.get("attempts") or 0),
        output_digest=data.get("output_digest"),
        lossless=bool(data.get("lossless", True)),
        lossy=tuple(data.get("lossy") or ()),
        placeholders=tuple(data.get("placeholders") or ()),
    )
