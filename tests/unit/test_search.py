"""Search: bm25 ranking on a small corpus, filters, safe query syntax, incremental updates."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nnrag.errors import ConfigError
from nnrag.index.build import index_tree
from nnrag.index.discover import discover_blocks
from nnrag.retrieve.search import SearchIndex, fts_query, search

FILES = {
    "zoo/__init__.py": "",
    "zoo/attention.py": '''
        import torch
        from torch import nn


        class ChannelAttn(nn.Module):
            """Squeeze-and-excitation style channel attention."""

            def __init__(self, channels, rd_ratio=0.25):
                super().__init__()
                self.fc1 = nn.Conv2d(channels, int(channels * rd_ratio), 1)
                self.fc2 = nn.Conv2d(int(channels * rd_ratio), channels, 1)

            def forward(self, x):
                return x * self.fc2(self.fc1(x.mean((2, 3), keepdim=True)).relu()).sigmoid()


        class MultiHeadSelfAttention(nn.Module):
            """Scaled dot-product self attention over tokens."""

            def __init__(self, dim, num_heads=8, qkv_bias=False):
                super().__init__()
                self.num_heads = num_heads
                self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
                return self.proj(attn @ v)
    ''',
    "zoo/layers/__init__.py": "",
    "zoo/layers/norm.py": '''
        from torch import nn


        class LayerNorm2d(nn.LayerNorm):
            """LayerNorm over the channels of NCHW tensors."""

            def forward(self, x):
                return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


        class GlobalResponseNorm(nn.Module):
            """Global response normalization from ConvNeXt-V2."""

            def __init__(self, dim, eps=1e-6):
                super().__init__()
                self.eps = eps

            def forward(self, x):
                return x / (x.norm(dim=1, keepdim=True) + self.eps)
    ''',
    "zoo/layers/pool.py": '''
        from torch import nn
        import torch.nn.functional as F


        class GeneralizedMeanPool(nn.Module):
            """Generalized mean (GeM) pooling."""

            def __init__(self, p=3.0, eps=1e-6):
                super().__init__()
                self.p = p
                self.eps = eps

            def forward(self, x):
                return F.adaptive_avg_pool2d(x.clamp(min=self.eps).pow(self.p), 1)


        class ConvBnAct(nn.Module):
            """Convolution, batch norm and activation."""

            def __init__(self, in_chs, out_chs, kernel_size=3, act_layer=nn.ReLU):
                super().__init__()
                self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, padding=kernel_size // 2)
                self.bn = nn.BatchNorm2d(out_chs)
                self.act = act_layer()

            def forward(self, x):
                return self.act(self.bn(self.conv(x)))
    ''',
    "zoo/losses.py": '''
        from torch import nn
        import torch.nn.functional as F


        class LabelSmoothingCrossEntropy(nn.Module):
            """Cross entropy with label smoothing."""

            def __init__(self, smoothing=0.1):
                super().__init__()
                self.smoothing = smoothing

            def forward(self, x, target):
                return F.cross_entropy(x, target, label_smoothing=self.smoothing)
    ''',
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    _write(root, FILES)
    return root


@pytest.fixture
def table(corpus: Path, tmp_path: Path) -> SearchIndex:
    index = index_tree(corpus, source="zoo")
    table = SearchIndex(tmp_path / "cache" / "search.db")
    table.update(index, discover_blocks(index))
    return table


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("channel attention", "zoo:zoo.attention:ChannelAttn"),
        ("squeeze excitation", "zoo:zoo.attention:ChannelAttn"),
        ("self attention heads", "zoo:zoo.attention:MultiHeadSelfAttention"),
        ("qkv_bias", "zoo:zoo.attention:MultiHeadSelfAttention"),
        ("layer norm", "zoo:zoo.layers.norm:LayerNorm2d"),
        ("response normalization", "zoo:zoo.layers.norm:GlobalResponseNorm"),
        ("GeM pooling", "zoo:zoo.layers.pool:GeneralizedMeanPool"),
        ("conv bn act", "zoo:zoo.layers.pool:ConvBnAct"),
        ("label smoothing", "zoo:zoo.losses:LabelSmoothingCrossEntropy"),
        ("loss", "zoo:zoo.losses:LabelSmoothingCrossEntropy"),
        ("LayerNorm2d", "zoo:zoo.layers.norm:LayerNorm2d"),
        ("generalized me", "zoo:zoo.layers.pool:GeneralizedMeanPool"),  # prefix of the last word
    ],
)
def test_expected_block_ranks_first(table: SearchIndex, query: str, expected: str) -> None:
    hits = table.search(query)
    assert hits, query
    assert hits[0].id == expected


def test_hits_carry_category_summary_and_file(table: SearchIndex) -> None:
    hit = table.search("channel attention")[0]
    assert hit.category == "attention"
    assert hit.summary == "Squeeze-and-excitation style channel attention."
    assert hit.path == "zoo/attention.py"
    assert hit.line > 0
    assert hit.score > 0


def test_filters(table: SearchIndex) -> None:
    assert {hit.category for hit in table.search("norm", category="normalization")} == {
        "normalization"
    }
    assert table.search("attention", source="other") == []
    assert table.search("attention", source="zoo")
    with pytest.raises(ConfigError, match="unknown category"):
        table.search("x", category="widgets")


@pytest.mark.parametrize(
    "query", ['"', "NEAR(a b)", "a AND", "OR", "-x", "col:x", "x*", "^", "()", "   ", "ü"]
)
def test_operators_are_escaped(table: SearchIndex, query: str) -> None:
    table.search(query)  # must not raise sqlite3.OperationalError


def test_fts_query_quotes_every_word() -> None:
    assert fts_query("ChannelAttn pool") == '"channel" "attn" "pool"*'
    assert fts_query('a" OR b', prefix=False) == '"a" "or" "b"'
    assert fts_query("!!") is None


def test_update_is_incremental(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "cache" / "search.db"
    index = index_tree(corpus, source="zoo")
    with SearchIndex(db) as table:
        first = table.update(index, discover_blocks(index))
        assert first.modules == 4
        assert first.blocks == table.count() == 7
        again = table.update(index, discover_blocks(index))
        assert (again.modules, again.blocks, again.removed) == (0, 0, 0)

    # One file changes: a block is renamed; one file is deleted.
    path = corpus / "zoo/layers/pool.py"
    path.write_text(path.read_text().replace("GeneralizedMeanPool", "GemPool"), encoding="utf-8")
    (corpus / "zoo/losses.py").unlink()
    index = index_tree(corpus, source="zoo")
    with SearchIndex(db) as table:
        update = table.update(index, discover_blocks(index))
        assert (update.modules, update.blocks, update.removed) == (1, 2, 1)
        assert table.count() == 6
        assert table.search("GemPool")[0].id == "zoo:zoo.layers.pool:GemPool"
        assert table.search("generalized mean")[0].id == "zoo:zoo.layers.pool:GemPool"
        assert "GeneralizedMeanPool" not in {hit.name for hit in table.search("generalized")}
        assert table.search("label smoothing") == []


def test_corrupt_database_is_rebuilt(corpus: Path, tmp_path: Path) -> None:
    db = tmp_path / "search.db"
    db.write_bytes(b"this is not a database" * 100)
    index = index_tree(corpus, source="zoo")
    hits = search(index, discover_blocks(index), "channel", cache_dir=tmp_path)
    assert hits[0].name == "ChannelAttn"


MLP_VARIANTS = (
    "from torch import nn\n"
    + "".join(
        f"""

class Mlp{k}Block(nn.Module):
    \"\"\"Mlp block: an MLP (mlp) with Mlp layers.\"\"\"

    def forward(self, x):
        return x
"""
        for k in range(12)
    )
    + """

class Mlp(nn.Module):
    def forward(self, x):
        return x
"""
)


def test_an_exact_class_name_comes_first(tmp_path: Path) -> None:
    # bm25 alone ranks the class Mlp (no docstring) after twelve blocks that say "mlp" a lot
    _write(tmp_path / "src", {"zoo/mlp.py": MLP_VARIANTS})
    index = index_tree(tmp_path / "src", source="zoo")
    table = SearchIndex(tmp_path / "search.db")
    table.update(index, discover_blocks(index))
    for query in ("Mlp", "mlp", "zoo.mlp.Mlp", "zoo:zoo.mlp:Mlp"):
        hits = table.search(query, limit=5)
        assert [hit.name for hit in hits[:2]] == ["Mlp", "Mlp0Block"], query
        assert hits[0].score > hits[1].score
        assert len(hits) == 5
    assert table.search("Mlp", category="loss") == []
