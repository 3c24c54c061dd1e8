"""Sandbox child: size profiles and the rules that size a parameter by its name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from nnrag.validate.probe.rules import NO_MATCH, Rules

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

HEADS = r"(^|_)(num_|n_)?heads?$|nhead|num_attention_heads"
"""Names of attention head counts (``num_heads``, ``encoder_attention_heads``, ``nhead``)."""

INT_RULES: Rules[Profile] = Rules.of(
    (r"spatial_?dims?$|^n_?dims?$|^ndims?$|dimensions$", lambda _, p: 2),  # 2-D inputs (1/2/3)
    (r"head_?dim|dim_?head|d_head|head_size|key_dim|d_k$|d_v$", lambda _, p: p.dim // p.heads),
    (HEADS, lambda _, p: p.heads),
    (r"num_groups|gn_groups|norm_groups", lambda _, p: 4),
    (r"classes|num_labels|n_class", lambda _, p: 10),
    (r"vocab|num_embeddings|num_tokens|n_tokens|n_vocab|num_words", lambda _, p: 100),
    (r"kernel|ksize|k_size", lambda _, p: 3),
    (r"stride", lambda _, p: 1),
    (r"index$|idx$", lambda _, p: 0),
    (r"dilation|groups", lambda _, p: 1),
    (r"padding|^pad", lambda _, p: 1),
    (r"patch", lambda _, p: 4),
    (r"window|partition", lambda _, p: 4),
    (r"feat_?size|feature_size|grid_size|feat_res", lambda _, p: p.img // 4),
    (r"img|image|resolution|input_size|^size$|^hw$", lambda _, p: p.img),
    (r"(seq|max|context|block)_?(len|length)|positions|n_ctx|max_len", lambda _, p: 64),
    (r"depths?$|layers$|num_blocks|n_blocks|blocks$|repeats$|stages$|^levels?$", lambda _, p: 1),
    (r"num_experts|experts", lambda _, p: 2),
    (r"top_?k", lambda _, p: 1),
    (r"reduction|ratio|expan", lambda _, p: 4),
    (r"scale|factor", lambda _, p: 2),
    (r"hidden|ffn|mlp|intermediate|inner|feedforward|d_ff|ff_dim|mid", lambda _, p: p.hidden),
    (r"rd_|reduced|squeeze|bottleneck", lambda _, p: p.dim // 4),
    (
        r"chan|ch$|chs$|^c\d?$|planes|feat|dim|width|d_model|embed|emb|latent|units|^nc|^nf|size|out",
        lambda _, p: p.dim,
    ),
    (r"^num_|^n_|^n$|count", lambda _, p: 2),
)
"""An int parameter's value by its (lower-case) name, for a size profile."""

FLOAT_RULES: Rules[Profile] = Rules.of(
    (r"mult", lambda _, p: 1.0),
    (r"drop|prob|rate|^p$", lambda _, p: 0.0),
    (r"eps", lambda _, p: 1e-5),
    (r"momentum", lambda _, p: 0.1),
    (r"ratio|expan", lambda _, p: 4.0),
    (r"scale|alpha|beta|gamma|temp|tau|init|weight", lambda _, p: 1.0),
)
"""A float parameter's value by its (lower-case) name (0.5 where no rule knows it)."""


def int_for(name: str, profile: Profile) -> object:
    found = INT_RULES.first(name.lower(), profile)
    return MISSING if found is NO_MATCH else found


def float_for(name: str) -> float:
    found = FLOAT_RULES.first(name.lower(), PROFILES[0])
    return 0.5 if found is NO_MATCH else cast(float, found)
