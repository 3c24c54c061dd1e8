from torch import nn

from cvlib.activation import build_activation_layer
from cvlib.norm import build_norm_layer
from det.registry import MODELS


@MODELS.register_module()
class Head(nn.Module):
    default_act = dict(type="Swish")

    def __init__(self, channels=8, norm_cfg=dict(type="BN"), loss={"type": "L1Loss"}):
        super().__init__()
        self.norm = build_norm_layer(norm_cfg, channels)
        self.act = build_activation_layer(self.default_act)
        self.loss = MODELS.build(loss)

    def forward(self, x):
        return self.loss(self.act(self.norm(x)), x)
