"""Sandbox child: size profiles and the rules that size a parameter by its name."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MISSING = object()
"""No rule matched."""

# --------------------------------------------------------------------------- size profiles


@dataclass(frozen=True, slots=True)
class Profile:
    """One consistent set of sizes: related names get related values, heads divide dims."""

    dim: int = 32
    heads: int = 2
    hidden: int = 64
    img: int = 32
    seq: int = 16
    norm: str = "layer"


PROFILES = (
    Profile(),
    Profile(dim=64, heads=4, hidden=128, img=64, norm="batch"),
    Profile(dim=16, heads=1, hidden=32, img=16),
)

_INT_RULES: tuple[tuple[str, Callable[[Profile], object]], ...] = (
    (r"spatial_?dims?$|^n_?dims?$|^ndims?$|dimensions$", lambda p: 2),  # 2-D inputs (1/2/3)
    (r"head_?dim|dim_?head|d_head|head_size|key_dim|d_k$|d_v$", lambda p: p.dim // p.heads),
    (r"(^|_)(num_|n_)?heads?$|nhead|num_attention_heads", lambda p: p.heads),
    (r"num_groups|gn_groups|norm_groups", lambda p: 4),
    (r"classes|num_labels|n_class", lambda p: 10),
    (r"vocab|num_embeddings|num_tokens|n_tokens|n_vocab|num_words", lambda p: 100),
    (r"kernel|ksize|k_size", lambda p: 3),
    (r"stride", lambda p: 1),
    (r"index$|idx$", lambda p: 0),
    (r"dilation|groups", lambda p: 1),
    (r"padding|^pad", lambda p: 1),
    (r"patch", lambda p: 4),
    (r"window|partition", lambda p: 4),
    (r"feat_?size|feature_size|grid_size|feat_res", lambda p: p.img // 4),
    (r"img|image|resolution|input_size|^size$|^hw$", lambda p: p.img),
    (r"(seq|max|context|block)_?(len|length)|positions|n_ctx|max_len", lambda p: 64),
    (r"depths?$|layers$|num_blocks|n_blocks|blocks$|repeats$|stages$", lambda p: 1),
    (r"num_experts|experts", lambda p: 2),
    (r"top_?k", lambda p: 1),
    (r"reduction|ratio|expan", lambda p: 4),
    (r"scale|factor", lambda p: 2),
    (r"hidden|ffn|mlp|intermediate|inner|feedforward|d_ff|ff_dim|mid", lambda p: p.hidden),
    (r"rd_|reduced|squeeze|bottleneck", lambda p: p.dim // 4),
    (
        r"chan|ch$|chs$|^c\d?$|planes|feat|dim|width|d_model|embed|emb|latent|units|^nc|^nf|size|out",
        lambda p: p.dim,
    ),
    (r"^num_|^n_|^n$|count", lambda p: 2),
)
_FLOAT_RULES: tuple[tuple[str, float], ...] = (
    (r"mult", 1.0),
    (r"drop|prob|rate|^p$", 0.0),
    (r"eps", 1e-5),
    (r"momentum", 0.1),
    (r"ratio|expan", 4.0),
    (r"scale|alpha|beta|gamma|temp|tau|init|weight", 1.0),
)


def int_for(name: str, profile: Profile) -> object:
    low = name.lower()
    for pattern, make in _INT_RULES:
        if re.search(pattern, low):
            return make(profile)
    return MISSING


def float_for(name: str) -> float:
    low = name.lower()
    return next((v for pattern, v in _FLOAT_RULES if re.search(pattern, low)), 0.5)
