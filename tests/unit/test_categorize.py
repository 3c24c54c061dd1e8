"""Block categories: rules on hand-made classes and accuracy on a hand-labelled corpus sample."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from nnrag.retrieve.categorize import BLOCK_CATEGORIES, categorize, class_features

CORPORA = Path("/work/corpora/src")
ROOTS = {
    "timm": CORPORA / "timm-1.0.31",
    "torchvision": CORPORA / "torchvision-0.29.1",
    "torch_geometric": CORPORA / "torch_geometric-2.8.1",
}

# Hand-labelled set. The first 179 rows are a seeded random sample (random.Random(7): 70 timm,
# 55 torchvision, 65 torch_geometric classes with a ``forward``; 11 torch_geometric
# ``BaseTransform`` classes, which are not nn.Modules, were dropped). Each label was written by
# reading the class's source, before the classifier existed. The last rows are a deliberate
# supplement, because the random sample held no activation or loss class.
# Conventions: a stage of conv blocks is "convolution", a stage of transformer blocks is
# "transformer block"; stems and residual conv blocks are "convolution"; MLP/FFN modules,
# dropout variants, wrappers, containers, data transforms and explainers are "utility";
# aggregation operators (torch_geometric.nn.aggr) and RoI poolers are "pooling"; position
# encodings and biases, patch embeddings and embedding models are "embedding"; classifier,
# detection and auxiliary heads and predictors are "head".
LABELLED_TEXT = """
timm/models/efficientvit_mit.py | FusedMBConv | convolution
timm/layers/pos_embed_sincos.py | RotaryEmbeddingDinoV3 | embedding
timm/models/hgnet.py | HighPerfGpuStage | convolution
timm/models/swin_transformer_v2_cr.py | PatchEmbed | embedding
timm/layers/cbam.py | ChannelAttn | attention
timm/layers/evo_norm.py | EvoNorm2dS0 | normalization
timm/models/nest.py | ConvPool | pooling
timm/layers/ml_decoder.py | TransformerDecoderLayerOptimal | transformer block
timm/models/gcvit.py | MbConvBlock | convolution
timm/models/repvit.py | RepVggDw | convolution
timm/layers/conv2d_same.py | Conv2dSame | convolution
timm/models/mobilenetv3.py | MobileNetV3 | network architecture
timm/models/convit.py | GPSA | attention
timm/layers/attention.py | AttentionRope | attention
timm/layers/hybrid_embed.py | HybridEmbedWithSize | embedding
timm/models/inception_v3.py | InceptionA | convolution
timm/models/iformer.py | StageBlock | transformer block
timm/layers/evo_norm.py | EvoNorm2dB0 | normalization
timm/models/csatv2.py | Dct2dStats | utility
timm/layers/layer_scale.py | LayerScale2d | utility
timm/models/pit.py | Transformer | transformer block
timm/models/inception_next.py | MetaNeXtBlock | convolution
timm/layers/conv2d_same.py | Conv2dSameExport | convolution
timm/models/pvt_v2.py | PyramidVisionTransformerStage | transformer block
timm/layers/norm_act.py | GroupNorm1Act | normalization
timm/models/convnext.py | ConvNeXt | network architecture
timm/models/swiftformer.py | Embedding | embedding
timm/models/starnet.py | Block | convolution
timm/layers/coord_attn.py | SimpleCoordAttn | attention
timm/models/regnet.py | PreBottleneck | convolution
timm/models/repvit.py | RepVitStem | convolution
timm/models/hgnet.py | HighPerfGpuNet | network architecture
timm/layers/cbam.py | LightChannelAttn | attention
timm/models/convnext.py | ConvNeXtBlock | convolution
timm/layers/bottleneck_attn.py | PosEmbedRel | embedding
timm/models/pnasnet.py | ActConvBn | convolution
timm/layers/other_pool.py | LsePlus1d | pooling
timm/models/edgenext.py | EdgeNeXtStage | convolution
timm/models/iformer.py | Stem | convolution
timm/layers/pos_embed_rel.py | RelPosBias | embedding
timm/models/nextvit.py | ConvAttention | attention
timm/layers/norm.py | SimpleNorm2d | normalization
timm/models/rdnet.py | Block | convolution
timm/models/efficientformer_v2.py | EfficientFormerV2 | network architecture
timm/models/pnasnet.py | Cell | convolution
timm/models/vision_transformer.py | ResPostBlock | transformer block
timm/models/_efficientnet_blocks.py | UniversalInvertedResidual | convolution
timm/layers/non_local_attn.py | BilinearAttnTransform | attention
timm/models/repghost.py | RepGhostNet | network architecture
timm/models/swin_transformer.py | SwinTransformerBlock | transformer block
timm/models/_features.py | FeatureGetterNet | utility
timm/models/gcvit.py | GlobalContextVit | network architecture
timm/layers/mlp.py | GluMlp | utility
timm/models/nfnet.py | DownsampleAvg | pooling
timm/models/xception.py | SeparableConv2d | convolution
timm/layers/coord_attn.py | EfficientLocalAttn | attention
timm/models/pvt_v2.py | Block | transformer block
timm/layers/conv_bn_act.py | ConvNormAct | convolution
timm/models/shvit.py | Residual | utility
timm/models/cait.py | TalkingHeadAttn | attention
timm/models/metaformer.py | Pooling | pooling
timm/models/visformer.py | Visformer | network architecture
timm/models/nasnet.py | ReductionCell1 | convolution
timm/models/inception_resnet_v2.py | Mixed_5b | convolution
timm/models/efficientvim.py | FFN | utility
timm/models/lowformer.py | FusedMBConv | convolution
timm/models/levit.py | NormLinear | head
timm/models/focalnet.py | FocalNetBlock | transformer block
timm/models/efficientformer.py | EfficientFormer | network architecture
timm/models/cspnet.py | DarkBlock | convolution
torchvision/models/inception.py | InceptionAux | head
torchvision/transforms/transforms.py | RandomInvert | utility
torchvision/models/mobilenetv3.py | MobileNetV3 | network architecture
torchvision/models/detection/retinanet.py | RetinaNetClassificationHead | head
torchvision/ops/stochastic_depth.py | StochasticDepth | utility
torchvision/models/quantization/googlenet.py | QuantizableGoogLeNet | network architecture
torchvision/ops/drop_block.py | DropBlock3d | utility
torchvision/models/video/swin_transformer.py | ShiftedWindowAttention3d | attention
torchvision/models/quantization/mobilenetv3.py | QuantizableInvertedResidual | convolution
torchvision/transforms/v2/_auto_augment.py | AutoAugment | utility
torchvision/models/swin_transformer.py | SwinTransformer | network architecture
torchvision/models/quantization/googlenet.py | QuantizableBasicConv2d | convolution
torchvision/transforms/autoaugment.py | TrivialAugmentWide | utility
torchvision/models/detection/keypoint_rcnn.py | KeypointRCNNPredictor | head
torchvision/models/detection/ssdlite.py | SSDLiteHead | head
torchvision/models/vision_transformer.py | VisionTransformer | network architecture
torchvision/models/squeezenet.py | SqueezeNet | network architecture
torchvision/models/inception.py | InceptionB | convolution
torchvision/transforms/v2/_auto_augment.py | AugMix | utility
torchvision/models/googlenet.py | InceptionAux | head
torchvision/models/video/s3d.py | S3D | network architecture
torchvision/transforms/transforms.py | RandomAdjustSharpness | utility
torchvision/models/detection/backbone_utils.py | BackboneWithFPN | network architecture
torchvision/transforms/transforms.py | ColorJitter | utility
torchvision/models/detection/retinanet.py | RetinaNetHead | head
torchvision/ops/poolers.py | MultiScaleRoIAlign | pooling
torchvision/ops/roi_pool.py | RoIPool | pooling
torchvision/models/quantization/inception.py | QuantizableInceptionC | convolution
torchvision/transforms/transforms.py | RandomPosterize | utility
torchvision/models/quantization/resnet.py | QuantizableBasicBlock | convolution
torchvision/transforms/_presets.py | OpticalFlow | utility
torchvision/models/video/swin_transformer.py | PatchEmbed3d | embedding
torchvision/transforms/_presets.py | ObjectDetection | utility
torchvision/models/video/mvit.py | Pool | pooling
torchvision/models/detection/generalized_rcnn.py | GeneralizedRCNN | network architecture
torchvision/models/detection/roi_heads.py | RoIHeads | head
torchvision/models/optical_flow/raft.py | FlowHead | head
torchvision/models/video/resnet.py | BasicBlock | convolution
torchvision/models/detection/fcos.py | FCOS | network architecture
torchvision/models/detection/fcos.py | FCOSRegressionHead | head
torchvision/models/quantization/inception.py | QuantizableInceptionB | convolution
torchvision/transforms/v2/_container.py | RandomOrder | utility
torchvision/transforms/v2/_auto_augment.py | RandAugment | utility
torchvision/models/optical_flow/raft.py | RAFT | network architecture
torchvision/models/resnet.py | ResNet | network architecture
torchvision/models/quantization/mobilenetv3.py | QuantizableMobileNetV3 | network architecture
torchvision/models/densenet.py | _DenseLayer | convolution
torchvision/models/video/mvit.py | MultiscaleBlock | transformer block
torchvision/models/quantization/resnet.py | QuantizableBottleneck | convolution
torchvision/models/inception.py | InceptionC | convolution
torchvision/models/detection/ssd.py | SSDFeatureExtractorVGG | network architecture
torchvision/transforms/v2/_container.py | Compose | utility
torchvision/transforms/transforms.py | Normalize | utility
torchvision/models/maxvit.py | MaxVitBlock | transformer block
torchvision/transforms/v2/_auto_augment.py | TrivialAugmentWide | utility
torch_geometric/nn/aggr/gru.py | GRUAggregation | pooling
torch_geometric/nn/conv/hgt_conv.py | HGTConv | graph layer
torch_geometric/nn/models/gpse.py | BatchNorm1dEdge | normalization
torch_geometric/nn/models/gpse.py | GeneralLayer | utility
torch_geometric/nn/models/visnet.py | VecLayerNorm | normalization
torch_geometric/llm/models/molecule_gpt.py | MoleculeGPT | network architecture
torch_geometric/nn/attention/qformer.py | QFormer | transformer block
torch_geometric/nn/models/node2vec.py | Node2Vec | embedding
torch_geometric/nn/models/gpse.py | GNNStackStage | graph layer
torch_geometric/nn/pool/sag_pool.py | SAGPooling | pooling
torch_geometric/nn/conv/res_gated_graph_conv.py | ResGatedGraphConv | graph layer
torch_geometric/nn/aggr/multi.py | MultiAggregation | pooling
torch_geometric/nn/models/linkx.py | LINKX | network architecture
torch_geometric/nn/models/graph_mixer.py | LinkEncoder | embedding
torch_geometric/nn/models/deepgcn.py | DeepGCNLayer | graph layer
torch_geometric/nn/models/gnnff.py | GaussianFilter | embedding
torch_geometric/nn/conv/gin_conv.py | GINEConv | graph layer
torch_geometric/nn/aggr/utils.py | MultiheadAttentionBlock | transformer block
torch_geometric/llm/models/protein_mpnn.py | PositionWiseFeedForward | utility
torch_geometric/nn/conv/arma_conv.py | ARMAConv | graph layer
torch_geometric/nn/conv/gmm_conv.py | GMMConv | graph layer
torch_geometric/explain/algorithm/captum_explainer.py | CaptumExplainer | utility
torch_geometric/nn/models/tgn.py | LastAggregator | pooling
torch_geometric/nn/conv/cluster_gcn_conv.py | ClusterGCNConv | graph layer
torch_geometric/nn/conv/nn_conv.py | NNConv | graph layer
torch_geometric/nn/conv/rgcn_conv.py | RGCNConv | graph layer
torch_geometric/explain/algorithm/attention_explainer.py | AttentionExplainer | utility
torch_geometric/nn/aggr/set2set.py | Set2Set | pooling
torch_geometric/nn/models/jumping_knowledge.py | JumpingKnowledge | pooling
torch_geometric/nn/norm/pair_norm.py | PairNorm | normalization
torch_geometric/nn/models/dimenet.py | InteractionBlock | graph layer
torch_geometric/nn/to_hetero_with_bases_transformer.py | HeteroBasisConv | graph layer
torch_geometric/nn/dense/dense_sage_conv.py | DenseSAGEConv | graph layer
torch_geometric/nn/aggr/fused.py | FusedAggregation | pooling
torch_geometric/nn/norm/batch_norm.py | BatchNorm | normalization
torch_geometric/graphgym/models/layer.py | BatchNorm1dEdge | normalization
torch_geometric/nn/models/rect.py | RECT_L | network architecture
torch_geometric/nn/sequential.py | Sequential | utility
torch_geometric/nn/models/gpse.py | MLP | utility
torch_geometric/nn/models/gpse.py | GeneralMultiLayer | utility
torch_geometric/nn/aggr/basic.py | MaxAggregation | pooling
torch_geometric/nn/models/tgn.py | TGNMemory | network architecture
torch_geometric/graphgym/models/layer.py | GATConv | graph layer
torch_geometric/nn/conv/cugraph/sage_conv.py | CuGraphSAGEConv | graph layer
torch_geometric/graphgym/models/layer.py | GeneralConv | graph layer
torch_geometric/nn/conv/fa_conv.py | FAConv | graph layer
torch_geometric/nn/models/meta.py | MetaLayer | graph layer
torch_geometric/nn/attention/performer.py | PerformerAttention | attention
torch_geometric/nn/aggr/basic.py | VarAggregation | pooling
torch_geometric/nn/kge/transe.py | TransE | embedding
torch_geometric/graphgym/models/layer.py | BatchNorm1dNode | normalization
torch_geometric/nn/aggr/basic.py | MeanAggregation | pooling
torch_geometric/contrib/explain/pgm_explainer.py | PGMExplainer | utility
torch_geometric/nn/to_hetero_with_bases_transformer.py | LinearAlign | utility
# supplement: activations and losses (absent from the random sample)
timm/layers/activations.py | Swish | activation
timm/layers/activations.py | Mish | activation
timm/layers/activations.py | HardSigmoid | activation
timm/layers/activations.py | PReLU | activation
timm/layers/activations.py | QuickGELU | activation
timm/layers/activations.py | GELUTanh | activation
timm/layers/activations_me.py | HardMishMe | activation
timm/loss/cross_entropy.py | LabelSmoothingCrossEntropy | loss
timm/loss/jsd.py | JsdCrossEntropy | loss
timm/loss/asymmetric_loss.py | AsymmetricLossSingleLabel | loss
timm/loss/poly_loss.py | PolyBinaryCrossEntropy | loss
timm/loss/zlpr_loss.py | ZlprLoss | loss
torch_geometric/nn/models/lightgcn.py | BPRLoss | loss
"""
LABELLED: tuple[tuple[str, str, str, str], ...] = tuple(
    (path.split("/", 1)[0], path, name, label)
    for path, name, label in (
        tuple(part.strip() for part in line.split("|"))
        for line in LABELLED_TEXT.splitlines()
        if line.strip() and not line.startswith("#")
    )
)


def _features(source: str, path: str, name: str):  # type: ignore[no-untyped-def]  # a stand-in patched over the real function in the test
    file = ROOTS[source] / path
    module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    tree = ast.parse(file.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return class_features(node, module=module)
    raise AssertionError(f"{path}: class {name} not found")


def test_labelled_set_is_large_and_valid() -> None:
    assert len(LABELLED) >= 150
    assert {label for *_, label in LABELLED} <= set(BLOCK_CATEGORIES)
    assert len({(src, path, name) for src, path, name, _ in LABELLED}) == len(LABELLED)


@pytest.mark.skipif(not CORPORA.is_dir(), reason="corpora not unpacked")
def test_accuracy_on_labelled_set() -> None:
    confusion: Counter[tuple[str, str]] = Counter()
    wrong: list[str] = []
    for source, path, name, label in LABELLED:
        got = categorize(_features(source, path, name))
        confusion[label, got] += 1
        if got != label:
            wrong.append(f"{source}:{path}:{name}: labelled {label!r}, got {got!r}")
    correct = sum(n for (label, got), n in confusion.items() if label == got)
    accuracy = correct / len(LABELLED)
    width = max(len(c) for c in BLOCK_CATEGORIES)
    print(f"\naccuracy {correct}/{len(LABELLED)} = {accuracy:.1%}")
    print("confusion (rows: label, columns: predicted, in order):", ", ".join(BLOCK_CATEGORIES))
    for label in BLOCK_CATEGORIES:
        row = " ".join(f"{confusion[label, got]:3d}" for got in BLOCK_CATEGORIES)
        print(f"{label:>{width}} {row}")
    print("\n".join(wrong))
    assert accuracy >= 0.90


def _one(code: str, module: str = "pkg.layers") -> str:
    tree = ast.parse(code)
    node = tree.body[-1]
    assert isinstance(node, ast.ClassDef)
    return categorize(class_features(node, module=module))


def test_split_identifier() -> None:
    from nnrag.retrieve.categorize import split_identifier

    assert split_identifier("SSDLiteHead") == ("ssd", "lite", "head")
    assert split_identifier("conv_bn_act") == ("conv", "bn", "act")
    assert split_identifier("Conv2dSame") == ("conv", "2", "d", "same")


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "class SqueezeExcite(nn.Module):\n"
            "    def __init__(self, c):\n"
            "        self.fc = nn.Conv2d(c, c, 1)\n"
            "    def forward(self, x):\n"
            "        return x * self.fc(x.mean((2, 3), keepdim=True)).sigmoid()\n",
            "convolution",
        ),
        (
            "class Block(nn.Module):\n"
            "    def __init__(self, dim):\n"
            "        self.norm1 = nn.LayerNorm(dim)\n"
            "        self.attn = Attention(dim)\n"
            "        self.norm2 = nn.LayerNorm(dim)\n"
            "        self.mlp = Mlp(dim)\n"
            "    def forward(self, x):\n"
            "        return x + self.mlp(self.norm2(x + self.attn(self.norm1(x))))\n",
            "transformer block",
        ),
        (
            "class FocalLoss(nn.Module):\n"
            "    def forward(self, logits, target):\n"
            "        return F.cross_entropy(logits, target)\n",
            "loss",
        ),
        (
            "class StarReLU(nn.Module):\n"
            "    def forward(self, x):\n"
            "        return F.relu(x) ** 2\n",
            "activation",
        ),
        (
            "class EdgeConv(MessagePassing):\n"
            "    def forward(self, x, edge_index):\n"
            "        return self.propagate(edge_index, x=x)\n",
            "graph layer",
        ),
        (
            "class Thing(nn.Module):\n    def forward(self, x):\n        return x\n",
            "utility",
        ),
    ],
)
def test_rules_on_hand_made_classes(code: str, expected: str) -> None:
    assert _one(code) == expected
