"""De-duplication levels on hand-made pairs: exact, lexical, structural, and a real variant."""

from __future__ import annotations

import ast
import textwrap

import pytest

from nnrag.retrieve.dedup import (
    DedupParams,
    DedupReport,
    dedup,
    dedup_json,
    dedup_summary,
    format_report,
)
from nnrag.retrieve.features import fingerprints, normalize, shingles

MLP = textwrap.dedent(
    '''
    class Mlp(nn.Module):
        """A two-layer perceptron."""

        def __init__(self, in_features, hidden_features, out_features, drop=0.0):
            super().__init__()
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = nn.GELU()
            self.drop1 = nn.Dropout(drop)
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop2 = nn.Dropout(drop)

        def forward(self, x):
            x = self.fc1(x)
            x = self.act(x)
            x = self.drop1(x)
            x = self.fc2(x)
            x = self.drop2(x)
            return x

        def extra_repr(self):
            return f"in={self.fc1.in_features}, out={self.fc2.out_features}"

        def reset_parameters(self):
            nn.init.trunc_normal_(self.fc1.weight, std=0.02)
            nn.init.zeros_(self.fc1.bias)
            nn.init.trunc_normal_(self.fc2.weight, std=0.02)
            nn.init.zeros_(self.fc2.bias)
    '''
)

# Same code: other docstring, comments, blank lines and line breaks.
MLP_REFORMATTED = textwrap.dedent(
    '''
    class Mlp(nn.Module):
        """MLP as used in Vision Transformer, MLP-Mixer and related networks."""
        def __init__(self, in_features, hidden_features, out_features, drop=0.0):
            super().__init__()
            # first projection
            self.fc1 = nn.Linear(in_features,
                                 hidden_features)
            self.act = nn.GELU()
            self.drop1 = nn.Dropout(drop)
            self.fc2 = nn.Linear(hidden_features, out_features)  # second projection
            self.drop2 = nn.Dropout(drop)
        def forward(self, x):
            x = self.fc1(x)
            x = self.act(x)
            x = self.drop1(x)
            x = self.fc2(x)
            x = self.drop2(x)
            return x
        def extra_repr(self):
            return f"in={self.fc1.in_features}, out={self.fc2.out_features}"
        def reset_parameters(self):
            nn.init.trunc_normal_(self.fc1.weight, std=0.02)
            nn.init.zeros_(self.fc1.bias)
            nn.init.trunc_normal_(self.fc2.weight, std=0.02)
            nn.init.zeros_(self.fc2.bias)
    '''
)


def _reorder(code: str) -> str:
    tree = ast.parse(code)
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    doc, *methods = cls.body
    cls.body = [doc, methods[0], methods[3], methods[1], methods[2]]  # __init__, reset, fwd, repr
    return ast.unparse(tree)


def _rename(code: str) -> str:
    renames = {
        "Mlp": "FeedForward",
        "in_features": "dim",
        "hidden_features": "hidden_dim",
        "out_features": "out_dim",
        "drop": "p",
        "fc1": "proj_in",
        "fc2": "proj_out",
        "act": "nonlin",
        "drop1": "dropout_a",
        "drop2": "dropout_b",
        "x": "h",
    }

    class Renamer(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.Name:
            node.id = renames.get(node.id, node.id)
            return node

        def visit_arg(self, node: ast.arg) -> ast.arg:
            node.arg = renames.get(node.arg, node.arg)
            return node

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            self.generic_visit(node)
            node.attr = renames.get(node.attr, node.attr)
            return node

        def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
            self.generic_visit(node)
            node.name = renames.get(node.name, node.name)
            return node

    return ast.unparse(Renamer().visit(ast.parse(code)))


# A real variant: same shape, another activation.
CONV_BN_ACT = textwrap.dedent(
    """
    class ConvBnAct(nn.Module):
        def __init__(self, in_chs, out_chs, kernel_size=3, stride=1):
            super().__init__()
            self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, stride, kernel_size // 2)
            self.bn = nn.BatchNorm2d(out_chs)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))
    """
)
CONV_BN_SILU = CONV_BN_ACT.replace("ConvBnAct", "ConvBnSiLU").replace("nn.ReLU", "nn.SiLU")

UNRELATED = textwrap.dedent(
    """
    class ChannelAttention(nn.Module):
        def __init__(self, channels, reduction=16):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.conv = nn.Conv2d(channels, channels // reduction, 1)
            self.gate = nn.Sigmoid()

        def forward(self, x):
            weights = self.gate(self.conv(self.pool(x)))
            if self.training:
                weights = weights.clamp(0.0, 1.0)
            return x * weights
    """
)

CODES = {
    "a:m:Mlp": MLP,
    "b:m:MlpReformatted": MLP_REFORMATTED,
    "c:m:MlpReordered": _reorder(MLP),
    "d:m:FeedForward": _rename(MLP),
    "e:m:ConvBnAct": CONV_BN_ACT,
    "f:m:ConvBnSiLU": CONV_BN_SILU,
    "g:m:ChannelAttention": UNRELATED,
}


def test_each_pair_merges_at_its_level() -> None:
    result = dedup(CODES)
    assert result.merged_at("a:m:Mlp", "b:m:MlpReformatted") == "exact"
    assert result.merged_at("a:m:Mlp", "c:m:MlpReordered") == "lexical"
    assert result.merged_at("a:m:Mlp", "d:m:FeedForward") == "structural"
    assert result.merged_at("e:m:ConvBnAct", "f:m:ConvBnSiLU") == "structural"
    assert result.merged_at("a:m:Mlp", "e:m:ConvBnAct") is None
    for other in CODES:
        assert result.merged_at("g:m:ChannelAttention", other) in (None, "exact")
    assert [level.unique for level in result.levels] == [6, 5, 3]


def test_levels_measure_what_they_claim() -> None:
    params = DedupParams()
    base_tree, base = normalize(MLP)
    _, reordered = normalize(_reorder(MLP))
    renamed_tree, renamed = normalize(_rename(MLP))
    variant_tree, variant = normalize(CONV_BN_SILU)
    base_shingles = shingles(base, params.shingle)

    def lexical(text: str) -> float:
        other = shingles(text, params.shingle)
        return len(base_shingles & other) / len(base_shingles | other)

    assert lexical(reordered) >= 0.9
    assert lexical(renamed) < 0.5
    conv_tree, conv = normalize(CONV_BN_ACT)
    conv_shingles = shingles(conv, params.shingle)
    variant_shingles = shingles(variant, params.shingle)
    assert len(conv_shingles & variant_shingles) / len(conv_shingles | variant_shingles) < 0.9
    assert fingerprints(base_tree, 4) == fingerprints(renamed_tree, 4)
    assert fingerprints(conv_tree, 4) == fingerprints(variant_tree, 4)
    assert normalize(MLP_REFORMATTED)[1] == base


def test_threshold_is_configurable() -> None:
    strict = dedup(CODES, params=DedupParams(lexical_threshold=0.99, structural_threshold=0.99))
    assert strict.merged_at("a:m:Mlp", "c:m:MlpReordered") is None
    assert strict.merged_at("a:m:Mlp", "d:m:FeedForward") == "structural"
    assert strict.merged_at("e:m:ConvBnAct", "f:m:ConvBnSiLU") == "structural"


def test_results_are_reproducible_and_order_independent() -> None:
    first = dedup(CODES)
    second = dedup(dict(reversed(list(CODES.items()))))
    assert first.levels == second.levels


def test_unparsable_code_is_reported_not_dropped_silently() -> None:
    result = dedup({"x:m:Broken": "class Broken(:\n", "y:m:Mlp": MLP})
    assert result.skipped == ("x:m:Broken",)
    assert result.levels[0].unique == 1


def test_summary_and_json() -> None:
    report = DedupReport(target=dedup(CODES), closure=dedup(CODES, scope="closure"))
    summary = dedup_summary(report)
    target = summary["class"]
    assert isinstance(target, dict)
    assert target["blocks"] == 7
    assert target["structural"]["unique"] == 3
    assert "closure" in summary
    full = dedup_json(report)
    clusters = full["class"]["clusters"]  # type: ignore[index]  # the dedup report is JSON-shaped dict[str, object]
    assert ["a:m:Mlp", "b:m:MlpReformatted"] in clusters["exact"]
    text = format_report(report)
    assert "target class: 7 blocks" in text
    assert "whole closure" in text


def test_exact_jaccard_matches_python_sets() -> None:
    import numpy as np

    from nnrag.retrieve.features import jaccard, sorted_unique

    rng = np.random.default_rng(0)
    for _ in range(200):
        a = sorted_unique(rng.integers(0, 50, rng.integers(0, 40)).astype(np.uint64))
        b = sorted_unique(rng.integers(0, 50, rng.integers(0, 40)).astype(np.uint64))
        sa, sb = set(a.tolist()), set(b.tolist())
        expected = len(sa & sb) / len(sa | sb) if sa | sb else 1.0
        assert jaccard(a, b) == pytest.approx(expected)
        assert a.tolist() == sorted(sa)
